#!/usr/bin/env bash
# Runs ON the GPU machine (through the device tool): configure against the machine's own
# PyTorch 2.11 and the carried third_party/gpu-bundle, build with every core, and run the test
# suite. Logs go to $OUT (or ./gpu-out) so they come back.
#   usage: scripts/gpu-build.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
bundle=$PWD/third_party/gpu-bundle/prefix/usr
# cudnn-frontend's headers, carried in the bundle (scripts/gpu-bundle.sh); without them the
# fused backward graph builds as a refusal (plugins/model/resnet/ops/CMakeLists.txt).
frontend=$PWD/third_party/gpu-bundle/cudnn-frontend/include
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
{
  echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  echo "== configure"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$bundle;$torch_prefix" -DORCH_CUDNN_FRONTEND_INCLUDE_DIR="$frontend" \
    --log-level=WARNING 2>&1 | grep -v -i kineto || true
  echo "== build"
  time cmake --build build-gpu -j "$(nproc)"
} 2>&1 | tee "$OUT/build.log"
echo "== test" | tee "$OUT/test.log"
ctest --test-dir build-gpu --output-on-failure -j 4 "$@" 2>&1 | tee -a "$OUT/test.log" || true
