#!/bin/bash
# A machine without a CUDA toolkit, as a user's fresh workstation: in a private mount namespace
# (`unshare -rm`, no root needed) the system toolkit is hidden (an empty folder over
# /usr/local/cuda*, /opt/cuda, every PATH folder that holds an nvcc left out, the CUDA variables
# unset). scripts/cuda-toolkit.sh, the toolkit step of scripts/setup.sh, must then notice and
# assemble one from NVIDIA's wheels in $ORCH_CACHE (installing them the first time, reusing them
# after), and the project must configure against it and build the nvjpeg loader plugin, whose
# crop kernel is a .cu file, with the CUDA kernels in the library.
# Usage: hidden_toolkit_test.sh SOURCE_DIR BUILD_DIR VENV PREFIX_PATH [CMAKE_ARGS...]
#   BUILD_DIR: made anew for this test (inside the main build folder, so ccache's base-relative
#   paths let a second run reuse the first one's objects); PREFIX_PATH: CMAKE_PREFIX_PATH with
#   '|' for ';' (ctest splits arguments at ';'); CMAKE_ARGS: passed to the configure step.
# Exit 77 (skipped) where a private mount namespace cannot be made.
set -u
if [ "${1:-}" != --inside ]; then
  if ! unshare -rm true 2>/dev/null; then
    echo "SKIPPED: cannot make a private mount namespace here (unshare -rm failed), so the"
    echo "         system CUDA toolkit cannot be hidden"
    exit 77
  fi
  exec unshare -rm bash "$0" --inside "$@"
fi
shift
SRC=$1
BUILD=$2
VENV=$3
PREFIX_PATH=${4//|/;}
shift 4
export ORCH_CACHE=${VENV%/*}  # the per-user cache that holds the venv (scripts/setup.sh)

FAILED=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; FAILED=1; fi
}
finish() {
  if [ "$FAILED" -ne 0 ]; then echo "FAILED (build folder kept: $BUILD)"; else echo "PASSED"; fi
}
trap finish EXIT
elapsed() { echo "$((SECONDS - $1)) s"; }

# 1. Hide the toolkit. Mounting over a symlink mounts over its target, so each is resolved.
EMPTY=$(mktemp -d /tmp/orch-no-cuda.XXXXXX)
trap 'rmdir "$EMPTY" 2>/dev/null; finish' EXIT
for d in /usr/local/cuda /usr/local/cuda-* /opt/cuda; do
  if [ -d "$d" ] && ! mount --bind "$EMPTY" "$(readlink -f "$d")"; then
    echo "SKIPPED: cannot mount over $d in a private mount namespace here"
    trap - EXIT
    rmdir "$EMPTY"
    exit 77
  fi
done
path=
IFS=:
for d in $PATH; do [ -x "$d/nvcc" ] || path=${path:+$path:}$d; done
unset IFS
export PATH=$path
unset CUDACXX CUDA_PATH CUDA_HOME CUDA_ROOT CUDAToolkit_ROOT CUDA_TOOLKIT_ROOT CUDA_BIN_PATH
check "no nvcc on PATH" bash -c '! command -v nvcc'
check "no toolkit under /usr/local or /opt" bash -c '! ls /usr/local/cuda*/bin/nvcc /opt/cuda/bin/nvcc 2>/dev/null'

# 2. The toolkit step: it must find no toolkit and point at the one it assembled.
t=$SECONDS
out=$(bash "$SRC/scripts/cuda-toolkit.sh" "$VENV" 2>&1)
rc=$?
echo "$out" | sed 's/^/  | /'
echo "  (toolkit step: $(elapsed $t))"
check "the toolkit step succeeds" test $rc -eq 0
nvcc=$(sed -n 's/^CMAKE_CUDA_COMPILER=//p' <<<"$out")
root=$(sed -n 's/^CUDAToolkit_ROOT=//p' <<<"$out")
check "it names an nvcc and a toolkit root" test -n "$nvcc" -a -n "$root"
check "its nvcc runs and is torch's CUDA version" bash -c \
  "'$nvcc' --version | grep -q \"release \$('$VENV/bin/python' -c 'import torch; print(torch.version.cuda)'),\""
check "cuda_runtime.h, cuda.h and the libraries LibTorch links are in the root" \
  test -f "$root/include/cuda_runtime.h" -a -f "$root/include/cuda.h" -a \
  -f "$root/include/cublas_v2.h" -a -e "$root/lib64/libcudart.so" -a -e "$root/lib64/libcublas.so" -a \
  -e "$root/lib64/libnvrtc.so"
[ $FAILED -eq 0 ] || exit 1
again=$(bash "$SRC/scripts/cuda-toolkit.sh" "$VENV" 2>&1)
check "a second run installs nothing and says so" grep -q "already in $root" <<<"$again"

# 3. Configure from scratch against it, as the Makefile's configure step does with setup's lines.
rm -rf "$BUILD"
t=$SECONDS
args=()
while IFS= read -r line; do
  case $line in CMAKE_CUDA_COMPILER=* | CUDAToolkit_ROOT=* | CUDA_TOOLKIT_ROOT_DIR=*) args+=("-D$line") ;; esac
done <<<"$out"
cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX_PATH" \
  -DORCH_BUILD_TESTS=OFF "${args[@]}" "$@" >"$BUILD.configure.log" 2>&1
rc=$?
echo "  (configure: $(elapsed $t))"
check "the project configures" test $rc -eq 0
[ $rc -eq 0 ] || { tail -40 "$BUILD.configure.log"; exit 1; }
check "CMake uses the assembled nvcc" grep -qx "CMAKE_CUDA_COMPILER:[A-Z]*=$nvcc" "$BUILD/CMakeCache.txt"
check "CMake finds the CUDA toolkit there" grep -q "Found CUDAToolkit: $root/include" "$BUILD.configure.log"
check "the nvjpeg loader is to be built" grep -q "^build plugins/liborch_loader_nvjpeg.so:" "$BUILD/build.ninja"

# 4. Build the plugin whose kernel is a .cu file.
t=$SECONDS
cmake --build "$BUILD" --target orch_loader_nvjpeg -j "$(nproc)" >"$BUILD.build.log" 2>&1
rc=$?
echo "  (build: $(elapsed $t))"
check "the nvjpeg loader plugin builds" test $rc -eq 0
[ $rc -eq 0 ] || { tail -40 "$BUILD.build.log"; exit 1; }
plugin=$BUILD/plugins/liborch_loader_nvjpeg.so
check "its .cu kernel was compiled by the assembled nvcc" \
  grep -q "$nvcc .*crop_resize.cu" "$BUILD/compile_commands.json"
check "the plugin holds CUDA device code (.nv_fatbin)" bash -c "readelf -SW '$plugin' | grep -q nv_fatbin"
check "every library the plugin needs is found" bash -c "! ldd '$plugin' | grep -q 'not found'"
[ $FAILED -eq 0 ] && rm -rf "$BUILD" "$BUILD.configure.log" "$BUILD.build.log"
exit $FAILED
