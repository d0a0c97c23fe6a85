#!/usr/bin/env bash
# Runs ON the two-GPU machine after scripts/gpu-build.sh (issue #7): the same 12-run sweep
# (bench/sweep-h200.yaml: 10 ResNet50 configurations, an injected OOM and an injected crash)
# on one GPU while `batch_size: auto` (bench/auto-batch-h200.yaml) searches on the other, then on
# two GPUs. Logs and databases go to $OUT; prints wall times and the outcomes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
orch=./build-gpu/orch
faults=build-gpu/fault-plugins
rm -rf "$OUT"/sweep1.db* "$OUT"/sweep2.db* "$OUT"/auto.db*

$orch --db "$OUT/auto.db" sweep bench/auto-batch-h200.yaml --gpus 1 > "$OUT/auto-batch.log" 2>&1 &
auto_pid=$!
t0=$(date +%s%N)
$orch --db "$OUT/sweep1.db" --plugin-path $faults sweep bench/sweep-h200.yaml --gpus 0 \
  > "$OUT/sweep-1gpu.log" 2>&1
rc=$?
echo "one GPU: exit $rc, wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/sweep-times.txt"
wait $auto_pid
rc=$?
echo "auto batch: exit $rc" | tee -a "$OUT/sweep-times.txt"

# Two GPUs second: the one-GPU sweep above met the cold page cache, not this one.
t0=$(date +%s%N)
$orch --db "$OUT/sweep2.db" --plugin-path $faults sweep bench/sweep-h200.yaml --gpus 0,1 \
  > "$OUT/sweep-2gpu.log" 2>&1
rc=$?
echo "two GPUs: exit $rc, wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/sweep-times.txt"


python3 - "$OUT" <<'PY' | tee "$OUT/sweep-summary.txt"
import sqlite3, sys
out = sys.argv[1]
for db in ("sweep2.db", "sweep1.db", "auto.db"):
    c = sqlite3.connect(f"{out}/{db}")
    print(f"== {db}: integrity {c.execute('PRAGMA integrity_check').fetchone()[0]}")
    for row in c.execute("""SELECT name, status, gpu, batch_size, batch_auto,
                                   printf('%.1f', images_per_s), printf('%.1f', duration_s),
                                   (SELECT printf('warmup %.1f s', value) FROM run_metrics m
                                    WHERE m.run_id = runs.id AND m.name = 'warmup_s'),
                                   substr(coalesce(error, ''), 1, 90)
                            FROM runs ORDER BY id"""):
        print("  ", " | ".join("" if v is None else str(v) for v in row))
PY
tail -5 "$OUT/auto-batch.log"
python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT json_extract(document_json, '\$.batch_search') FROM runs\").fetchall())" "$OUT/auto.db"
ls "$OUT"/auto.db.runs/*/*/ 2>/dev/null | head -30
rm -rf "$OUT"/*.db.runs  # per-run logs: too many files to bring back
rm -f "$OUT"/*.lock
