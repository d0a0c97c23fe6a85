#!/usr/bin/env bash
# Runs ON the GPU machine after scripts/gpu-build.sh: the same ResNet50 configurations through
# orch and through PyTorch's Python API, in one invocation on one GPU, and prints both img/s
# and the ratio (bench/compare.py). Results go to $OUT/bench.{db,log}, bench-pytorch.jsonl,
# bench-table.txt.
#   usage: bench/run-gpu-bench.sh [all|precisions|streams]   (default: all, ~7 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
part=${1:-all}
mkdir -p "$OUT"
orch=./build-gpu/orch
rm -f "$OUT/bench.db"*
: > "$OUT/bench-orch.log"
: > "$OUT/bench-pytorch.jsonl"
py() { python3 bench/pytorch_resnet50.py --channels-last "$@" | tee -a "$OUT/bench-pytorch.jsonl"; }
if [[ $part == all || $part == precisions ]]; then
  $orch --db "$OUT/bench.db" run bench/resnet50-h200.yaml 2>&1 | tee -a "$OUT/bench-orch.log"
  for p in fp32 tf32 amp-bf16 amp-fp16; do py --precision $p; done
fi
if [[ $part == all || $part == streams ]]; then
  $orch --db "$OUT/bench.db" run bench/resnet50-streams-h200.yaml 2>&1 | tee -a "$OUT/bench-orch.log"
  # The stream strategies in plain PyTorch (AMP bf16); `device` is also the precisions' amp-bf16.
  [[ $part == streams ]] && py --precision amp-bf16
  for s in pinned copy-overlap cuda-graph multi-stream; do py --precision amp-bf16 --stream $s; done
fi
python3 bench/compare.py "$OUT/bench.db" "$OUT/bench-pytorch.jsonl" | tee "$OUT/bench-table.txt"
