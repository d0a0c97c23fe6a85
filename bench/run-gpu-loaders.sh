#!/usr/bin/env bash
# Issue #5 on the GPU machine, after scripts/gpu-build.sh: input pipelines, in one invocation.
#   1. a 10,000-image ImageNet-shaped JPEG folder (`orch dataset make`) and its 256x256 cache
#   2. loader-only img/s: imagefolder at 4, 8 and 14 workers, cached, nvjpeg (hardware engines
#      and CUDA decoder), synthetic (pinned), and torchvision's DataLoader with the same workers
#      and augmentation
#   3. end to end: AMP bf16 channels-last ResNet50 fed by each loader vs synthetic
#      (bench/loaders.yaml)
# Results: $OUT/loaders-only.txt, $OUT/loaders-torchvision.jsonl, $OUT/loaders-ratio.txt,
# $OUT/loaders.{db,log}. Env: ROUNDS (imagefolder/torchvision turns per worker count, default 2).
#   usage: bench/run-gpu-loaders.sh [all|only|e2e] [DATA_DIR]   (default all, /tmp/orch-loaders)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
part=${1:-all}
DATA=${2:-/tmp/orch-loaders}
orch=./build-gpu/orch
mkdir -p "$OUT" "$DATA"
if [[ ! -d $DATA/jpeg/train ]]; then
  $orch dataset make "$DATA/jpeg" --classes 100 --per-class 100 --seed 0 | tee "$OUT/loaders-make.txt"
fi
[[ -f $DATA/cache-256.bin ]] || $orch dataset cache "$DATA/jpeg" "$DATA/cache-256.bin" --size 256
# Read every file once so no row pays for the cold page cache (the first reader would).
cat "$DATA"/jpeg/train/*/* > /dev/null

if [[ $part == all || $part == only ]]; then
  # A row that fails says so and the others still run.
  bench() { $orch dataset bench --device cuda --channels-last --batch-size 256 --batches 50 --warmup 5 --data "$1" || echo "   exit $?"; }
  # imagefolder and torchvision's DataLoader take turns at each worker count, ROUNDS times
  # (default 2): torchvision's rate moved by up to 45% between invocations on the H200's host,
  # so each ratio is of means over alternating runs, not of one run each.
  : > "$OUT/loaders-torchvision.jsonl"
  {
    echo "== cores: $(nproc)"
    for w in 4 8 14; do
      for ((round = 1; round <= ${ROUNDS:-2}; round++)); do
        bench "{plugin: imagefolder, root: $DATA/jpeg, workers: $w}"
        python3 bench/torchvision_loader.py "$DATA/jpeg" --workers $w --batch 256 |
          tee -a "$OUT/loaders-torchvision.jsonl"
      done
    done
    bench "{plugin: cached, path: $DATA/cache-256.bin, workers: 14}"
    bench "{plugin: nvjpeg, root: $DATA/jpeg, backend: hardware}"
    bench "{plugin: nvjpeg, root: $DATA/jpeg, backend: gpu}"
    bench "{plugin: synthetic, location: pinned, batches: 2}"
  } 2>&1 | tee "$OUT/loaders-only.txt"
  python3 bench/loader_ratio.py "$OUT/loaders-only.txt" "$OUT/loaders-torchvision.jsonl" |
    tee "$OUT/loaders-ratio.txt"
fi

if [[ $part == all || $part == e2e ]]; then
  # The experiment file's paths are this script's defaults, so rewrite them for DATA.
  sed "s#/tmp/orch-loaders#$DATA#g" bench/loaders.yaml > "$OUT/loaders.yaml"
  rm -f "$OUT/loaders.db"*
  $orch --db "$OUT/loaders.db" run "$OUT/loaders.yaml" 2>&1 | tee "$OUT/loaders.log"
  $orch --db "$OUT/loaders.db" rank --by images_per_s 2>&1 | tee "$OUT/loaders-rank.txt"
  rm -f "$OUT/loaders.db".* "$OUT/loaders.db-"*
fi
