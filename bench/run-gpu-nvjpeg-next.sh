#!/usr/bin/env bash
# Runs ON the GPU machine, in the snapshot after scripts/gpu-snapshot.sh: issue #5's next round
# in as few device calls as it takes (written 2026-11-30 without a GPU: not yet run).
#   1. the GPU tests of what is new ([nvjpeg] and [busy_gpu], a process per case);
#   2. the 10,000-image folder (kept in /tmp: a later call on the same warm machine reuses it);
#   3. bench/run-gpu-loaders-busy.sh: every nvjpeg setting loader-only, idle and under a busy
#      GPU (~2-3 minutes);
#   4. bench/nvjpeg-next-h200.yaml end to end with `orch sweep` into /tmp/nx.db until DEADLINE;
#      the sweep resumes where it stopped, so the next call (within the machine's 30 s idle
#      time, on the same machine: `cd /tmp/snap && SKIP_DONE=1 DEADLINE=560
#      bench/run-gpu-nvjpeg-next.sh`, no rebuild) finishes it;
#   5. bench/loader_share.py's table of what the database holds so far.
# Everything lands in $OUT: gpu-tests.txt, loaders-busy.txt, sweep.log, nx.db, share.txt.
# Env: DEADLINE (seconds from this script's start for the sweep to stop, default 430: a
# 600 s call less the ~130 s snapshot build and a margin), SKIP_DONE.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
start=$(date +%s)
orch=./build-gpu/orch
if [[ -z ${SKIP_DONE:-} ]]; then
  scripts/gpu-tests-isolated.sh "[nvjpeg],[busy_gpu]" 120 > /dev/null 2>&1
  tail -n 5 "$OUT/gpu-tests.txt"
  rm -rf "$OUT/gpu-tests"  # the per-case logs of failures; gpu-tests.txt names them
  [[ -d /tmp/orch-loaders/jpeg ]] ||
    "$orch" dataset make /tmp/orch-loaders/jpeg --classes 100 --per-class 100 --seed 0 > "$OUT/ds.log" 2>&1
  bench/run-gpu-loaders-busy.sh 50 35 > /dev/null 2>&1
  grep -E "^== |img/s|replays while" "$OUT/loaders-busy.txt"
fi
left=$(( ${DEADLINE:-430} - ($(date +%s) - start) ))
echo "sweep: ${left} s left"
if (( left > 30 )); then
  timeout "$left" "$orch" --db /tmp/nx.db sweep bench/nvjpeg-next-h200.yaml >> "$OUT/sweep.log" 2>&1
  echo "sweep: exit $? (124: stopped at the deadline; run again to resume)"
fi
cp /tmp/nx.db "$OUT/nx.db" 2>/dev/null
python3 bench/loader_share.py /tmp/nx.db nvjpeg-next-h200 | tee "$OUT/share.txt"
echo "total: $(( $(date +%s) - start )) s"
