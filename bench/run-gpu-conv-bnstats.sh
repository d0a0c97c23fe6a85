#!/usr/bin/env bash
# Runs ON the GPU machine after scripts/gpu-build.sh (or gpu-snapshot.sh): issue #10's question
# before wiring cuDNN's graph-API convolution + batch statistics into the model: is it faster
# than what the model runs now? For ResNet50's bottleneck shapes at batch 256, fp16 and bf16,
# with and without the batch-norm + ReLU prologue, the first three plans cuDNN finalizes
# (its heuristics' order) are each checked
# against ATen and timed against ATen's convolution + at::batch_norm_stats (and, with the
# prologue, ATen's scale, bias and ReLU before it). Takes ~1-4 minutes (runtime-fusion plans
# compile when finalized); each case's line is flushed, so a stop at LIMIT keeps what ran. Output: $OUT/conv-bnstats-timing.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
timeout "${LIMIT:-300}" ./build-gpu/tests/orch_gpu_tests "[conv_bnstats_timing]" \
  > "$OUT/conv-bnstats-timing.txt" 2>&1
echo "exit $?"
grep -E "^dtype|^fp16|^bf16|passed|failed" "$OUT/conv-bnstats-timing.txt"
