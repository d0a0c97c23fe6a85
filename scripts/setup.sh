#!/usr/bin/env bash
# Installs what orch needs, and only what is missing (idempotent: a second run installs nothing
# and says so).
#   usage: scripts/setup.sh [--for demo|test] [--dry-run]
#   --for demo  what building orch and `make demo` need: the compiler tools and libraries
#               (Debian packages), LibTorch from the torch==2.11.0 wheel in a Python venv, and
#               without a CUDA toolkit, its compiler and headers from NVIDIA's wheels;
#   --for test  (the default, what `make test` and CI use) that, plus what only the tests use:
#               Catch2, clang-format, headless Chromium, Slurm and munge, and the MLflow venv.
#   --dry-run   prints what is there and what would be installed, with sizes; installs nothing.
# In detail:
#   - Debian packages through apt-get (sudo when not root; scripts/debian-packages.sh). The
#     daemons of test's (munge, slurmctld, slurmd) are not started by the install and are left
#     disabled, where this run installed them.
#   - LibTorch from the torch==2.11.0 wheel (the GPU machine's exact version), in a Python venv
#     kept in a per-user cache outside the checkout ($ORCH_CACHE, default ~/.cache/orch), so a
#     fresh clone or a CI run reuses it instead of downloading ~3 GB again.
#   - without a CUDA toolkit, its compiler and headers from NVIDIA's wheels, in the same cache
#     (scripts/cuda-toolkit.sh).
#   - for test: MLflow (mlflow==3.17.2, ~850 MB with its dependencies) in a venv of its own in
#     the same cache, for the test of `orch export --to mlflow`, which starts a real `mlflow
#     server`.
# The sizes in docs/setup.md (and in --dry-run's lines) were measured on Debian 12.
# Prints the torch CMake prefix on its last line as "TORCH_PREFIX=...", and before it, only
# where the CUDA toolkit came from the wheels, the CMake settings that point at it.
set -euo pipefail

FOR="test"
DRY_RUN=0
while [ $# -gt 0 ]; do
  case $1 in
    --for) FOR=${2:-}; shift 2 || { echo "setup: --for needs demo or test" >&2; exit 2; } ;;
    --for=*) FOR=${1#--for=}; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "setup: unknown argument '$1' (usage: scripts/setup.sh [--for demo|test] [--dry-run])" >&2; exit 2 ;;
  esac
done
case $FOR in
  demo | test) ;;
  *) echo "setup: --for takes demo or test, not '$FOR'" >&2; exit 2 ;;
esac

TORCH_VERSION=2.11.0
ORCH_CACHE=${ORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/orch}
VENV=$ORCH_CACHE/venv-torch-$TORCH_VERSION

say() { echo "setup: $*"; }

dry=()
if [ "$DRY_RUN" -eq 1 ]; then
  dry=(--dry-run)
  say "dry run for $FOR: nothing is installed"
fi

# The Debian packages (scripts/debian-packages.sh): for demo, or for test too; only those
# missing; the daemons that test's bring are left disabled where this run installs them.
bash "$(dirname "$0")/debian-packages.sh" --for "$FOR" "${dry[@]}"

# In a dry run, a component is reported and not installed: want NAME SIZE says it is missing,
# and, where this is no dry run, that it is installed now.
want() {
  if [ "$DRY_RUN" -eq 1 ]; then
    say "$1: would install ($2)"
    return 1
  fi
  say "installing $1 ($2)"
}

# A machine without a Python that can make venvs (pyenv's can; Debian's needs python3-venv,
# installed above) gets its venv from whichever python3 is first on PATH.
have_torch() {
  [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" -c "import torch,sys; sys.exit(0 if torch.__version__.split('+')[0]=='$TORCH_VERSION' else 1)" 2>/dev/null
}
if have_torch; then
  say "torch $TORCH_VERSION already in $VENV"
elif want "torch==$TORCH_VERSION into $VENV" "once per machine; ~3 GB download, 4.7 GB on disk"; then
  mkdir -p "$ORCH_CACHE"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "torch==$TORCH_VERSION" numpy
  have_torch || { echo "setup: torch did not install correctly" >&2; exit 1; }
fi

# nvJPEG's header and library for the `nvjpeg` loader plugin: NVIDIA publishes them as a small
# wheel (the CUDA toolkit here has no nvjpeg; the GPU machine's has). Same CUDA 13 line as torch.
have_nvjpeg() {
  [ -x "$VENV/bin/python" ] &&
    [ -f "$("$VENV/bin/python" -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')/nvidia/cu13/include/nvjpeg.h" ]
}
if have_nvjpeg; then
  say "nvjpeg headers already in $VENV"
elif want "nvidia-nvjpeg (CUDA 13) into $VENV" "~6 MB"; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps "nvidia-nvjpeg==13.0.*"
  have_nvjpeg || { echo "setup: nvidia-nvjpeg did not install correctly" >&2; exit 1; }
fi

# torchvision, for scripts/export_torchscript.py (torchvision models exported to TorchScript for
# the `torchscript` model), script workloads run with this venv's interpreter, and the tests'
# references (tests/python; PIL for the image decoding test). 0.26 is the release built against
# torch 2.11; --no-deps keeps pip from touching torch, and pillow is its only other requirement.
TORCHVISION_VERSION=0.26.0
have_torchvision() {
  [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" -c "import torchvision,sys; sys.exit(0 if torchvision.__version__.split('+')[0]=='$TORCHVISION_VERSION' else 1)" 2>/dev/null
}
if have_torchvision; then
  say "torchvision $TORCHVISION_VERSION already in $VENV"
elif want "torchvision==$TORCHVISION_VERSION into $VENV" "~25 MB with pillow"; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    "torchvision==$TORCHVISION_VERSION" "pillow>=5.3.0,!=8.3.*"
  have_torchvision || { echo "setup: torchvision did not install correctly" >&2; exit 1; }
fi

# MLflow, for the `orch export --to mlflow` test (tests/mlflow): the server it starts and the
# client it reads back with; only for test (`orch export --to mlflow` itself needs no Python).
# A venv of its own, not the torch venv: MLflow brings pandas, scipy, scikit-learn and pyarrow,
# whose requirements must never move torch's numpy, and a worktree installing it does not
# disturb the tests of another that use the torch venv meanwhile.
MLFLOW_VERSION=3.17.2
MLFLOW_VENV=$ORCH_CACHE/venv-mlflow-$MLFLOW_VERSION
have_mlflow() {
  [ -x "$MLFLOW_VENV/bin/python" ] &&
    "$MLFLOW_VENV/bin/python" -c "import mlflow,sys; sys.exit(0 if mlflow.__version__=='$MLFLOW_VERSION' else 1)" 2>/dev/null
}
if [ "$FOR" != test ]; then
  [ "$DRY_RUN" -eq 1 ] && say "mlflow $MLFLOW_VERSION venv: only for test"
elif have_mlflow; then
  say "mlflow $MLFLOW_VERSION already in $MLFLOW_VENV"
elif want "mlflow==$MLFLOW_VERSION into $MLFLOW_VENV" "once per machine; ~850 MB"; then
  mkdir -p "$ORCH_CACHE"
  rm -rf "$MLFLOW_VENV"
  python3 -m venv "$MLFLOW_VENV"
  "$MLFLOW_VENV/bin/pip" install --quiet --disable-pip-version-check "mlflow==$MLFLOW_VERSION"
  have_mlflow || { echo "setup: mlflow did not install correctly" >&2; exit 1; }
fi

# The CUDA compiler and headers: a toolkit already installed is used as it is; without one,
# NVIDIA's wheels at torch's CUDA version, in $ORCH_CACHE (scripts/cuda-toolkit.sh). It prints
# the CMake settings for them (CMAKE_CUDA_COMPILER=... and the toolkit root), or nothing.
ORCH_CACHE=$ORCH_CACHE bash "$(dirname "$0")/cuda-toolkit.sh" "$VENV" "${dry[@]}"

# cudnn-frontend's C++ headers, for the resnet model's fused backward graph: only include/ of
# the nvidia-cudnn-frontend wheel, in $ORCH_CACHE, where CMake looks for them
# (scripts/cudnn-frontend.sh). It prints ORCH_CUDNN_FRONTEND_INCLUDE_DIR=... for the log.
# Optional: without them the build still succeeds and the graph refuses, saying why.
ORCH_CACHE=$ORCH_CACHE bash "$(dirname "$0")/cudnn-frontend.sh" "${dry[@]}" "$VENV/bin/python" ||
  say "cudnn-frontend's headers could not be fetched: the fused backward graph will refuse"

if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing was installed"
  exit 0
fi

# ccache keeps its cache in the per-user cache too; big enough for LibTorch objects.
if command -v ccache >/dev/null; then ccache --max-size=5G >/dev/null; fi

echo "TORCH_PREFIX=$("$VENV/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)"
