#!/usr/bin/env bash
# Runs ON the GPU machine, in the snapshot after scripts/gpu-snapshot.sh: issue #5's closing
# record in one invocation (~6 minutes after the build).
#   1. the nvjpeg and busy-GPU tests, a process per case;
#   2. bench/run-gpu-loaders.sh all: the 10,000-image folder and its cache, loader-only img/s
#      (imagefolder at 4, 8, 14 workers taking turns with torchvision's DataLoader, ROUNDS
#      each, then cached, nvjpeg on the engines and with CUDA, synthetic), the ratios against
#      the 2x target (bench/loader_ratio.py), and end to end (bench/loaders.yaml: AMP bf16
#      channels-last ResNet50 fed by each loader vs synthetic).
# An earlier version ran on 2026-11-30 with two more steps, since done: the hw_preallocate
# confirmation (bench/nvjpeg-confirm-h200.yaml) and loader-only rows under a busy GPU.
# This version ran on 2026-11-30 (evening, H200, 16 cores), with the current code:
#   scripts/gpu-snapshot.sh; cd /tmp/snap; bench/run-gpu-loaders-final.sh
#   -> tests 13 of 13 passed; imagefolder / torchvision 2.95x, 2.37x, 2.51x at 4, 8, 14 workers
#      (lowest pair 2.32x); nvjpeg end to end 96.7% of synthetic (4,841.2 / 5,008.7 img/s):
#      both of issue #5's targets met (README, Input pipelines). 263 s after the build.
# $OUT gets at most 8 files back, so the sub-scripts write to a work folder and this script
# packs it: $OUT/summary.txt (the headlines) and $OUT/loaders-final.tgz (every log and database).
set -uo pipefail
cd "$(dirname "$0")/.."
final=${OUT:-$PWD/gpu-out}
work=/tmp/loaders-final
rm -rf "$work" && mkdir -p "$work" "$final"
export OUT=$work
start=$(date +%s)
{
  echo "== GPU tests"
  scripts/gpu-tests-isolated.sh "[nvjpeg],[busy_gpu]" 120 > /dev/null 2>&1
  cat "$work/gpu-tests.txt"
  echo "== loaders (bench/run-gpu-loaders.sh all), $(( $(date +%s) - start )) s in"
  timeout "${LOADERS_LIMIT:-420}" bench/run-gpu-loaders.sh all > "$work/loaders-all.log" 2>&1 || echo "exit $?"
  grep -E "img/s" "$work/loaders-only.txt" 2>/dev/null
  cat "$work/loaders-ratio.txt" "$work/loaders-rank.txt" 2>/dev/null
  echo "== total $(( $(date +%s) - start )) s"
} 2>&1 | tee "$final/summary.txt"
tar -czf "$final/loaders-final.tgz" -C "$work" --exclude='*.runs' .
