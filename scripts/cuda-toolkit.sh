#!/usr/bin/env bash
# The CUDA compiler and headers for a machine without a CUDA toolkit, from NVIDIA's wheels.
# Usage: scripts/cuda-toolkit.sh VENV [--dry-run]   (VENV: the torch venv that scripts/setup.sh
# made; --dry-run: say what is there or would be installed, install and print no setting)
#
# A toolkit that CMake would find (CUDACXX, nvcc on PATH, $CUDA_PATH, /usr/local/cuda[-X.Y])
# is used as it is: this names it, installs nothing and prints no setting. Otherwise it
# builds one in $ORCH_CACHE/cuda-X.Y (X.Y: the CUDA version torch was built with) and prints
# the CMake settings that point at it, one KEY=VALUE a line, which the Makefile's configure
# step reads:
#   CMAKE_CUDA_COMPILER=.../bin/nvcc  CUDAToolkit_ROOT=...  CUDA_TOOLKIT_ROOT_DIR=...
# (the last for Caffe2's FindCUDA, which LibTorch's CMake runs before FindCUDAToolkit).
#
# What goes in: the compiler (nvidia-cuda-nvcc, its nvidia-nvvm and nvidia-cuda-crt),
# nvidia-cuda-cccl (nvcc puts include/cccl on every .cu file's include path) and
# nvidia-cuda-runtime, pinned to torch's CUDA version, ~100 MB of wheels installed into the
# folder itself, not the venv, so a build that uses a system toolkit never sees their headers.
# The libraries LibTorch's CMake links (cuBLAS, cuFFT, cuRAND, NVRTC, ...) and their headers
# are torch's own wheels in the venv, linked in rather than downloaded again. The folder then
# has a toolkit's layout (bin/, nvvm/, include/, lib64/ with the unversioned .so names a linker
# looks for), because nvcc finds cicc, its headers and libraries relative to its own path.
set -euo pipefail

VENV=${1:?usage: cuda-toolkit.sh VENV [--dry-run]}
DRY_RUN=0
[ "${2:-}" = --dry-run ] && DRY_RUN=1
ORCH_CACHE=${ORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/orch}
say() { echo "setup: $*"; }

system_nvcc() {
  local c
  for c in "${CUDACXX:-}" "$(command -v nvcc 2>/dev/null || true)" \
    "${CUDA_PATH:+$CUDA_PATH/bin/nvcc}" /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do
    if [ -n "$c" ] && [ -x "$c" ]; then
      echo "$c"
      return 0
    fi
  done
  return 1
}
if nvcc_path=$(system_nvcc); then
  say "CUDA toolkit: $nvcc_path"
  exit 0
fi

PY=$VENV/bin/python
if [ "$DRY_RUN" -eq 1 ] && ! [ -x "$PY" ]; then
  # No torch yet to say which CUDA: the toolkit would follow it (13.0 for torch 2.11).
  say "no CUDA toolkit found: would install torch's CUDA compiler and headers into" \
    "$ORCH_CACHE/cuda-X.Y (~100 MB)"
  exit 0
fi
CUDA_VERSION=$("$PY" -c 'import torch; print(torch.version.cuda or "")')
if [ -z "$CUDA_VERSION" ]; then
  echo "setup: torch in $VENV was built without CUDA; no CUDA toolkit to install" >&2
  exit 1
fi
CUDA_MAJOR=${CUDA_VERSION%%.*}
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
ROOT=$ORCH_CACHE/cuda-$CUDA_VERSION
WHEELS=(nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt nvidia-cuda-cccl nvidia-cuda-runtime)

# Complete when nvcc runs and reports torch's version, and the layout's last step is done.
have_toolkit() {
  [ -f "$ROOT/.complete" ] && [ -x "$ROOT/bin/nvcc" ] &&
    "$ROOT/bin/nvcc" --version 2>/dev/null | grep -q "release $CUDA_VERSION,"
}
if have_toolkit; then
  say "CUDA $CUDA_VERSION compiler and headers already in $ROOT (no system toolkit found)"
elif [ "$DRY_RUN" -eq 1 ]; then
  say "no CUDA toolkit found: would install CUDA $CUDA_VERSION's compiler and headers into $ROOT" \
    "(~100 MB)"
  exit 0
else
  say "no CUDA toolkit found: installing CUDA $CUDA_VERSION's compiler and headers into $ROOT" \
    "(once per machine; ~100 MB)"
  mkdir -p "$ORCH_CACHE"
  rm -rf "$ROOT" "$ROOT.partial"
  # The runtime at the venv's exact version where torch brought one (its headers then match
  # the libcudart.so that torch loads), the others at the newest of torch's CUDA minor version.
  runtime=$("$PY" -c 'import importlib.metadata as m; print(m.version("nvidia-cuda-runtime"))' \
    2>/dev/null || true)
  specs=()
  for w in "${WHEELS[@]}"; do
    if [ "$w" = nvidia-cuda-runtime ] && [ -n "$runtime" ]; then
      specs+=("$w==$runtime")
    else
      specs+=("$w==$CUDA_VERSION.*")
    fi
  done
  # --no-deps: nvcc's wheel requires the others unpinned, which would pull the newest CUDA.
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    --target "$ROOT.partial/wheels" "${specs[@]}"
  # The wheels' tree becomes the toolkit: nvcc takes its headers and libraries from bin/../,
  # resolved through any symlink to its real folder, so they must all be there. Torch's CUDA
  # headers and libraries are linked into it beside the wheels' own (the same names in both
  # are the same runtime, at torch's version in the venv).
  tree=$ROOT.partial/wheels/nvidia/cu$CUDA_MAJOR
  for sub in include lib; do
    for f in "$SITE/nvidia/cu$CUDA_MAJOR/$sub"/*; do
      [ -e "$tree/$sub/${f##*/}" ] || ln -s "$f" "$tree/$sub/"
    done
  done
  # The linker's names (libcublas.so for libcublas.so.13, ...) and a toolkit's lib64/.
  for f in "$tree"/lib/lib*.so.*; do
    base=${f##*/}
    base=${base%%.so.*}.so
    [ -e "$tree/lib/$base" ] || ln -s "${f##*/}" "$tree/lib/$base"
  done
  ln -s lib "$tree/lib64"
  # Relative links: the folder is renamed into place once complete.
  for sub in bin nvvm include lib lib64; do
    ln -s "wheels/nvidia/cu$CUDA_MAJOR/$sub" "$ROOT.partial/$sub"
  done
  touch "$ROOT.partial/.complete"
  mv "$ROOT.partial" "$ROOT"
  have_toolkit || {
    echo "setup: the CUDA $CUDA_VERSION compiler in $ROOT does not run or is not $CUDA_VERSION" >&2
    exit 1
  }
fi

[ "$DRY_RUN" -eq 1 ] && exit 0
echo "CMAKE_CUDA_COMPILER=$ROOT/bin/nvcc"
echo "CUDAToolkit_ROOT=$ROOT"
echo "CUDA_TOOLKIT_ROOT_DIR=$ROOT"
