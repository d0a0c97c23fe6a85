#!/usr/bin/env bash
# Runs ON the GPU machine, in the snapshot after scripts/gpu-snapshot.sh: issue #5's closing
# round in one invocation.
#   1. the nvjpeg and busy-GPU tests (and max-pool's: its launcher's error check changed too),
#      a process per case;
#   2. bench/run-gpu-loaders.sh all: the 10,000-image folder and its cache, loader-only img/s
#      (imagefolder at 4, 8, 14 workers, cached, nvjpeg on the engines and with CUDA, synthetic)
#      beside torchvision's DataLoader with the same workers and augmentation, and end to end
#      (bench/loaders.yaml: AMP bf16 channels-last ResNet50 fed by each loader vs synthetic);
#   3. bench/nvjpeg-confirm-h200.yaml: nvjpeg with its defaults against synthetic data, eager
#      and graph-captured, two repeats each, and the previous default (hw_preallocate: false);
#   4. loader-only under a busy GPU (50 ms replays): nvjpeg's default, with and without
#      hw_preallocate.
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
  scripts/gpu-tests-isolated.sh "[nvjpeg],[busy_gpu],[max_pool]" 120 > /dev/null 2>&1
  cat "$work/gpu-tests.txt"
  echo "== loaders (bench/run-gpu-loaders.sh all), $(( $(date +%s) - start )) s in"
  timeout 270 bench/run-gpu-loaders.sh all > "$work/loaders-all.log" 2>&1 || echo "exit $?"
  grep -E "img/s" "$work/loaders-only.txt" 2>/dev/null
  cat "$work/loaders-torchvision.jsonl" 2>/dev/null
  cat "$work/loaders-rank.txt" 2>/dev/null
  echo "== confirm (bench/nvjpeg-confirm-h200.yaml), $(( $(date +%s) - start )) s in"
  rm -f /tmp/confirm.db*
  timeout 170 ./build-gpu/orch --db /tmp/confirm.db sweep bench/nvjpeg-confirm-h200.yaml \
    > "$work/confirm.log" 2>&1 || echo "exit $?"
  cp /tmp/confirm.db "$work/" 2>/dev/null
  python3 bench/loader_share.py /tmp/confirm.db nvjpeg-confirm-h200
  echo "== busy GPU, $(( $(date +%s) - start )) s in"
  FIRST=2 timeout 75 bench/run-gpu-loaders-busy.sh 50 > /dev/null 2>&1 || echo "exit $?"
  grep -E "^== |img/s|replays while|error" "$work/loaders-busy.txt"
  echo "== total $(( $(date +%s) - start )) s"
} 2>&1 | tee "$final/summary.txt"
tar -czf "$final/loaders-final.tgz" -C "$work" --exclude='*.runs' .
