#!/usr/bin/env bash
# cudnn-frontend's C++ headers (header-only) for the fused backward graph of the resnet model
# (plugins/model/resnet/ops/dgrad_relu_dbn_graph.cpp). NVIDIA publishes them in the
# nvidia-cudnn-frontend wheel on PyPI, whose include/ holds them beside a Python module we do
# not use: the wheel is downloaded (no install, no dependencies) and only include/ is kept, in
# the per-user cache, once per machine.
#   usage: scripts/cudnn-frontend.sh [--dry-run] [PYTHON]   (PYTHON: one with pip; default: the
#          torch venv's that scripts/setup.sh made, else python3; --dry-run: say whether they
#          are there, fetch nothing)
# Prints the include folder on its last line as "ORCH_CUDNN_FRONTEND_INCLUDE_DIR=...".
# Called by scripts/setup.sh (CMake looks in the same place) and scripts/gpu-bundle.sh (which
# copies the headers to the GPU machine, which reaches no registry).
#
# The version: one that knows cuDNN 9.19's graph API (the cuDNN of torch 2.11's nvidia-cudnn
# wheel and of the GPU machine); the frontend checks the cuDNN it runs on and refuses what that
# cuDNN lacks, so a newer cuDNN keeps working with it.
set -euo pipefail

CUDNN_FRONTEND_VERSION=1.18.0
ORCH_CACHE=${ORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/orch}
dir=$ORCH_CACHE/cudnn-frontend-$CUDNN_FRONTEND_VERSION
say() { echo "setup: $*" >&2; }
DRY_RUN=0
if [ "${1:-}" = --dry-run ]; then
  DRY_RUN=1
  shift
fi

if [ -f "$dir/include/cudnn_frontend.h" ]; then
  say "cudnn-frontend $CUDNN_FRONTEND_VERSION headers already in $dir"
elif [ "$DRY_RUN" -eq 1 ]; then
  say "cudnn-frontend $CUDNN_FRONTEND_VERSION headers into $dir: would fetch (~3 MB)"
  exit 0
else
  python=${1:-}
  if [ -z "$python" ]; then
    python=python3
    for v in "$ORCH_CACHE"/venv-torch-*/bin/python; do [ -x "$v" ] && python=$v; done
  fi
  say "fetching cudnn-frontend $CUDNN_FRONTEND_VERSION headers (nvidia-cudnn-frontend wheel) into $dir"
  mkdir -p "$ORCH_CACHE"
  tmp=$(mktemp -d "$ORCH_CACHE/.cudnn-frontend.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
    "nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION" -d "$tmp/wheel" >&2
  wheels=("$tmp"/wheel/nvidia_cudnn_frontend-*.whl)
  # Unpacked beside the final folder and renamed into place, so an interrupted run leaves no
  # half a folder that the check above would take for a complete one.
  "$python" - "${wheels[0]}" "$tmp/out" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if n.startswith("include/")]
    if "include/cudnn_frontend.h" not in names:
        sys.exit("cudnn-frontend.sh: the wheel has no include/cudnn_frontend.h")
    z.extractall(sys.argv[2], names)
EOF
  rm -rf "$dir"
  mv "$tmp/out" "$dir"
  [ -f "$dir/include/cudnn_frontend.h" ] || { echo "setup: cudnn-frontend did not unpack" >&2; exit 1; }
fi
[ "$DRY_RUN" -eq 1 ] && exit 0
echo "ORCH_CUDNN_FRONTEND_INCLUDE_DIR=$dir/include"
