#!/usr/bin/env bash
# Runs ON the GPU machine after the build: issue #5's nvjpeg settings, loader-only, while the
# GPU is kept busy as by a graph-captured ResNet50 step (`orch dataset bench --busy-gpu-ms`,
# ~50 ms a replay like the H200's unfused bf16 b256 step, ~35 ms like the fused one). Each
# setting ~10 s, so a screening of them all takes a minute or two, against minutes per
# setting end to end (bench/nvjpeg-next-h200.yaml). The idle-GPU rate comes first for
# reference. Output: $OUT/loaders-busy.txt (each setting's img/s, counters, the replays).
#   usage: bench/run-gpu-loaders-busy.sh [BUSY_MS ...]   (default: 50 35)
# Env: DATA (the JPEG folder, default /tmp/orch-loaders/jpeg, made if missing), ORCH, FIRST.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
orch=$(realpath "${ORCH:-./build-gpu/orch}")
data=${DATA:-/tmp/orch-loaders/jpeg}
[[ -d $data ]] || "$orch" dataset make "$data" --classes 100 --per-class 100 --seed 0
find "$data" -type f -print0 | xargs -0 cat > /dev/null  # warm the page cache: reading is not the question
base="plugin: nvjpeg, root: $data, backend: hardware"
# hw_preallocate is on by default since 2026-11-30; each setting is also tried without it.
settings=(
  "{$base}"
  "{$base, hw_preallocate: false}"
  "{$base, output: yuv}"
  "{$base, output: yuv, hw_preallocate: false}"
  "{$base, decoders: 2}"
  "{$base, hw_pipeline: true}"
  "{$base, cpu_share: 0.5, workers: 12}"
)
log="$OUT/loaders-busy.txt"
: > "$log"
bench() {  # $1: busy ms (0: idle), $2: the data setting
  local extra=()
  [[ $1 != 0 ]] && extra=(--busy-gpu-ms "$1")
  echo "== busy ${1} ms: $2" | tee -a "$log"
  timeout 120 "$orch" dataset bench --data "$2" --device cuda --channels-last \
    --batch-size 256 --batches 30 --warmup 5 "${extra[@]}" >> "$log" 2>&1 \
    || echo "   exit $?" | tee -a "$log"
  grep -E "img/s|replays while" "$log" | tail -2
}
(( ${FIRST:-0} > 0 )) && settings=("${settings[@]:0:$FIRST}")  # env FIRST=N: the first N only
busy=("$@")
(( ${#busy[@]} )) || busy=(50 35)
bench 0 "${settings[0]}"
for ms in "${busy[@]}"; do
  for s in "${settings[@]}"; do bench "$ms" "$s"; done
done
