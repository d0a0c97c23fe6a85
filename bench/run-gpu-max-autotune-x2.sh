#!/usr/bin/env bash
# Runs ON a two-GPU machine (device kind nvidia-h200-x2): two torch.compile(mode="max-autotune")
# compilations side by side, one per GPU, each with its own Inductor cache packed slim into
# $OUT (bench/run-gpu-max-autotune.sh, PACK=slim, pack names g0 and g1), so that one device call
# compiles two of issue #10's shapes and later calls on any machine, carrying the packs in
# third_party/gpu-bundle/, start from them (bench/unpack-inductor-cache.sh merges all packs).
# Each compilation took ~10 minutes from scratch on one H200 (two calls); the machine's 32
# cores are shared by both. Ran 2026-11-30 (nvidia-h200-x2): LIMIT=470 ... fp16:256 fp16:768
# stopped both at 470 s (slim packs 30 and 32 MiB); PACK=0 LIMIT=230 ... fp16:256 fp16:768 on the
# same warm machine finished them (58 and 100 s more; 7,020.0 and 7,601.1 img/s, measured with
# both GPUs busy). README, "Fused batch-norm against torch.compile", has the comparison after.
#   usage: bench/run-gpu-max-autotune-x2.sh DTYPE:BATCH DTYPE:BATCH   e.g. fp16:256 bf16:768
# Env: LIMIT (seconds for each Python run, default 500), PACK (default slim; 0 leaves each
# cache in /tmp/orch-inductor-gN for the next call on the same warm machine). Results: $OUT/g0/, $OUT/g1/ (the
# jsonl line and the pack pieces of each), $OUT/g0.log, $OUT/g1.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
(( $# == 2 )) || { echo "usage: $0 DTYPE:BATCH DTYPE:BATCH" >&2; exit 2; }
gpu=0
for shape in "$@"; do
  dtype=${shape%%:*} batch=${shape##*:}
  mkdir -p "$OUT/g$gpu"
  CUDA_VISIBLE_DEVICES=$gpu OUT="$OUT/g$gpu" TORCHINDUCTOR_CACHE_DIR=/tmp/orch-inductor-g$gpu \
    PACK=${PACK:-slim} PACK_NAME=g$gpu DTYPES=$dtype BATCH=$batch LIMIT=${LIMIT:-500} \
    bench/run-gpu-max-autotune.sh > "$OUT/g$gpu.log" 2>&1 &
  gpu=$((gpu + 1))
done
wait
tail -n 4 "$OUT"/g0.log "$OUT"/g1.log
