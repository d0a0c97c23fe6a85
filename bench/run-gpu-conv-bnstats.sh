#!/usr/bin/env bash
# Runs ON the GPU machine after scripts/gpu-build.sh (or gpu-snapshot.sh): issue #10's question
# before wiring cuDNN's graph-API convolution + batch statistics into the model: is it faster
# than what the model runs now? For ResNet50's bottleneck shapes at batch 256, fp16 and bf16,
# with and without the batch-norm + ReLU prologue, the first three plans cuDNN finalizes
# (its heuristics' order) are each checked
# against ATen and timed against ATen's convolution + at::batch_norm_stats (and, with the
# prologue, ATen's scale, bias and ReLU before it). Takes ~1-4 minutes (runtime-fusion plans
# compile when finalized); each case's line is flushed, so a stop at LIMIT keeps what ran. Output: $OUT/conv-bnstats-timing.txt.
# Ran 2026-11-30 (evening, H200): LIMIT=300 bench/run-gpu-conv-bnstats.sh, all 40 rows (10 shapes).
# fp16: the graph costs about the convolution alone (the ten: 0.978 ms, ATen conv 0.901, conv +
# stats 2.746); with the prologue 1.094 ms against ATen's 5.389. bf16: slower than ATen's
# convolution for every shape; with the prologue no plan (refused). README has the table.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
timeout "${LIMIT:-300}" ./build-gpu/tests/orch_gpu_tests "[conv_bnstats_timing]" \
  > "$OUT/conv-bnstats-timing.txt" 2>&1
echo "exit $?"
grep -E "^dtype|^fp16|^bf16|passed|failed" "$OUT/conv-bnstats-timing.txt"
