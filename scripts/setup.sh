#!/usr/bin/env bash
# Installs what orch needs to build and test, and only what is missing (idempotent: a second
# run installs nothing and says so).
#   - Debian packages (compiler tools, yaml-cpp, SQLite, Boost, Catch2, ...) through apt-get;
#   - LibTorch from the torch==2.11.0 wheel (the GPU machine's exact version), in a Python venv
#     kept in a per-user cache outside the checkout ($ORCH_CACHE, default ~/.cache/orch), so a
#     fresh clone or a CI run reuses it instead of downloading ~3 GB again.
#   - without a CUDA toolkit, its compiler and headers from NVIDIA's wheels, in the same cache
#     (scripts/cuda-toolkit.sh).
#   - MLflow (mlflow==3.17.2, ~850 MB with its dependencies) in a venv of its own in the same
#     cache, for the test of `orch export --to mlflow`, which starts a real `mlflow server`.
# Prints the torch CMake prefix on its last line as "TORCH_PREFIX=...", and before it, only
# where the CUDA toolkit came from the wheels, the CMake settings that point at it.
set -euo pipefail

TORCH_VERSION=2.11.0
ORCH_CACHE=${ORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/orch}
VENV=$ORCH_CACHE/venv-torch-$TORCH_VERSION

DEBIAN_PACKAGES=(
  cmake ninja-build g++ ccache pkg-config
  libyaml-cpp-dev libsqlite3-dev sqlite3 libboost-dev catch2 libcli11-dev nlohmann-json3-dev
  libfmt-dev libxxhash-dev libjpeg62-turbo-dev libpng-dev python3-venv
  chromium  # headless, for the test that opens `orch report`'s HTML in a real browser
  slurm-wlm munge  # a single-node Slurm on localhost, for the `orch sweep --launcher slurm` test
  clang-format  # scripts/format.sh and its check in ctest
  libcurl4-openssl-dev  # `orch export --to mlflow` talks to the tracking server over HTTP
)

say() { echo "setup: $*"; }

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  say "all ${#DEBIAN_PACKAGES[@]} Debian packages already installed"
else
  say "installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# A machine without a Python that can make venvs (pyenv's can; Debian's needs python3-venv,
# installed above) gets its venv from whichever python3 is first on PATH.
have_torch() {
  [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" -c "import torch,sys; sys.exit(0 if torch.__version__.split('+')[0]=='$TORCH_VERSION' else 1)" 2>/dev/null
}
if have_torch; then
  say "torch $TORCH_VERSION already in $VENV"
else
  say "installing torch==$TORCH_VERSION into $VENV (once per machine; ~3 GB)"
  mkdir -p "$ORCH_CACHE"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "torch==$TORCH_VERSION" numpy
  have_torch || { echo "setup: torch did not install correctly" >&2; exit 1; }
fi

# nvJPEG's header and library for the `nvjpeg` loader plugin: NVIDIA publishes them as a small
# wheel (the CUDA toolkit here has no nvjpeg; the GPU machine's has). Same CUDA 13 line as torch.
have_nvjpeg() { [ -f "$("$VENV/bin/python" -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')/nvidia/cu13/include/nvjpeg.h" ]; }
if have_nvjpeg; then
  say "nvjpeg headers already in $VENV"
else
  say "installing nvidia-nvjpeg (CUDA 13) into $VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps "nvidia-nvjpeg==13.0.*"
  have_nvjpeg || { echo "setup: nvidia-nvjpeg did not install correctly" >&2; exit 1; }
fi

# torchvision, for scripts/export_torchscript.py (torchvision models exported to TorchScript for
# the `torchscript` model; no test needs it). 0.26 is the release built against torch 2.11;
# --no-deps keeps pip from touching torch, and pillow is its only other requirement.
TORCHVISION_VERSION=0.26.0
have_torchvision() {
  "$VENV/bin/python" -c "import torchvision,sys; sys.exit(0 if torchvision.__version__.split('+')[0]=='$TORCHVISION_VERSION' else 1)" 2>/dev/null
}
if have_torchvision; then
  say "torchvision $TORCHVISION_VERSION already in $VENV"
else
  say "installing torchvision==$TORCHVISION_VERSION into $VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    "torchvision==$TORCHVISION_VERSION" "pillow>=5.3.0,!=8.3.*"
  have_torchvision || { echo "setup: torchvision did not install correctly" >&2; exit 1; }
fi

# MLflow, for the `orch export --to mlflow` test (tests/mlflow): the server it starts and the
# client it reads back with. A venv of its own, not the torch venv: MLflow brings pandas, scipy,
# scikit-learn and pyarrow, whose requirements must never move torch's numpy, and a worktree
# installing it does not disturb the tests of another that use the torch venv meanwhile.
MLFLOW_VERSION=3.17.2
MLFLOW_VENV=$ORCH_CACHE/venv-mlflow-$MLFLOW_VERSION
have_mlflow() {
  [ -x "$MLFLOW_VENV/bin/python" ] &&
    "$MLFLOW_VENV/bin/python" -c "import mlflow,sys; sys.exit(0 if mlflow.__version__=='$MLFLOW_VERSION' else 1)" 2>/dev/null
}
if have_mlflow; then
  say "mlflow $MLFLOW_VERSION already in $MLFLOW_VENV"
else
  say "installing mlflow==$MLFLOW_VERSION into $MLFLOW_VENV (once per machine; ~850 MB)"
  mkdir -p "$ORCH_CACHE"
  rm -rf "$MLFLOW_VENV"
  python3 -m venv "$MLFLOW_VENV"
  "$MLFLOW_VENV/bin/pip" install --quiet --disable-pip-version-check "mlflow==$MLFLOW_VERSION"
  have_mlflow || { echo "setup: mlflow did not install correctly" >&2; exit 1; }
fi

# The CUDA compiler and headers: a toolkit already installed is used as it is; without one,
# NVIDIA's wheels at torch's CUDA version, in $ORCH_CACHE (scripts/cuda-toolkit.sh). It prints
# the CMake settings for them (CMAKE_CUDA_COMPILER=... and the toolkit root), or nothing.
ORCH_CACHE=$ORCH_CACHE bash "$(dirname "$0")/cuda-toolkit.sh" "$VENV"

# cudnn-frontend's C++ headers, for the resnet model's fused backward graph: only include/ of
# the nvidia-cudnn-frontend wheel, in $ORCH_CACHE, where CMake looks for them
# (scripts/cudnn-frontend.sh). It prints ORCH_CUDNN_FRONTEND_INCLUDE_DIR=... for the log.
# Optional: without them the build still succeeds and the graph refuses, saying why.
ORCH_CACHE=$ORCH_CACHE bash "$(dirname "$0")/cudnn-frontend.sh" "$VENV/bin/python" ||
  say "cudnn-frontend's headers could not be fetched: the fused backward graph will refuse"

# ccache keeps its cache in the per-user cache too; big enough for LibTorch objects.
if command -v ccache >/dev/null; then ccache --max-size=5G >/dev/null; fi

echo "TORCH_PREFIX=$("$VENV/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)"
