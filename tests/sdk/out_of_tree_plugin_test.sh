#!/bin/bash
# The plugin SDK from outside the tree, as a user would use it: `cmake --install` the build
# into a fresh prefix, configure and build examples/out-of-tree-plugin against that prefix
# alone (find_package(orch)) and the same LibTorch, then check that orch lists and loads both
# plugins (nothing refused), trains the model in a 2-step CPU run, feeds batches from a
# generated JPEG folder through the loader (built on the installed orch::imagedata and
# orch::loaderkit), and that the installed orch_add_plugin refuses a LibTorch of another
# version at configure time.
# Usage: out_of_tree_plugin_test.sh ORCH_BINARY BUILD_DIR SOURCE_DIR CMAKE CXX PREFIX_PATH
#   PREFIX_PATH: the build's CMAKE_PREFIX_PATH with '|' for ';' (ctest splits arguments at ';')
set -u
ORCH=$1
BUILD=$2
SRC=$3
CMAKE=$4
CXX=$5
PREFIX_PATH=${6//|/;}

T=$(mktemp -d /tmp/orch-sdk-test.XXXXXX)
FAILED=0
finish() {
  if [ "$FAILED" -ne 0 ]; then echo "FAILED (files kept in $T)"; else rm -rf "$T"; echo "PASSED"; fi
}
trap finish EXIT
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; FAILED=1; fi
}
contains() { grep -qE -- "$2" <<<"$1"; }

# 1. Install: the SDK headers and the CMake package, nothing else needed from the tree.
"$CMAKE" --install "$BUILD" --prefix "$T/prefix" >"$T/install.log" 2>&1
check "cmake --install succeeds" test $? -eq 0
check "the SDK headers are installed" test -f "$T/prefix/include/orch/model.h" -a \
  -f "$T/prefix/include/orch/plugin.h" -a -f "$T/prefix/include/orch/params.h"
check "the image-data and loader libraries are installed" \
  test -f "$T/prefix/include/orch/imagedata/image_folder.h" -a \
  -f "$T/prefix/include/orch/loaderkit/batch_pipeline.h" -a -f "$T/prefix/lib/liborch_imagedata.a"
check "the package config is installed" test -f "$T/prefix/lib/cmake/orch/orchConfig.cmake" -a \
  -f "$T/prefix/lib/cmake/orch/orchConfigVersion.cmake"

# 2. Configure and build the example from a copy outside the source tree, so no path into
# orch's sources can leak in: only the installed prefix and LibTorch are on the prefix path.
cp -r "$SRC/examples/out-of-tree-plugin" "$T/example"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
"$CMAKE" -S "$T/example" -B "$T/example/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$CXX" "${launcher[@]}" \
  -DCMAKE_PREFIX_PATH="$T/prefix;$PREFIX_PATH" >"$T/configure.log" 2>&1
rc=$?
check "the example configures against the installed SDK" test $rc -eq 0
[ $rc -eq 0 ] || { tail -n 30 "$T/configure.log"; exit 1; }
"$CMAKE" --build "$T/example/build" >"$T/build.log" 2>&1
rc=$?
check "the example builds" test $rc -eq 0
[ $rc -eq 0 ] || { tail -n 30 "$T/build.log"; exit 1; }
lib="$T/example/build/liborch_model_tinynet.so"
check "the plugin library exists" test -f "$lib"
# Hidden visibility: orch's two entry points are exported, the plugin's own classes are not
# (the SDK's interfaces are, on purpose: BOOST_SYMBOL_VISIBLE lets dynamic_cast cross libraries).
exported=$(nm -D --defined-only "$lib" | awk '{print $3}')
check "orch_plugin_abi and orch_plugin_factory are exported" \
  bash -c 'grep -qx orch_plugin_abi <<<"$1" && grep -qx orch_plugin_factory <<<"$1"' _ "$exported"
check "the plugin's own symbols are hidden" bash -c '! grep -q tinynet <<<"$1"' _ "$exported"
loader="$T/example/build/liborch_loader_centercrop.so"
check "the loader library exists" test -f "$loader"
# The static orch::imagedata linked into it stays hidden too, like the loader's own classes.
# (std::thread's weak vtable for loaderkit's worker lambda is exported, as in orch's own loaders.)
exported=$(nm -D --defined-only "$loader" | awk '{print $3}')
check "the loader exports orch's two entry points" \
  bash -c 'grep -qx orch_plugin_abi <<<"$1" && grep -qx orch_plugin_factory <<<"$1"' _ "$exported"
check "and none of its own or orch::imagedata's symbols" \
  bash -c '! grep -qE "centercrop|imagedata" <<<"$1"' _ "$exported"

# 3. orch finds it on --plugin-path, accepts its ABI stamp and shows its schema.
out=$("$ORCH" --plugin-path "$T/example/build" plugins 2>&1)
echo "$out" | grep -E "tinynet|centercrop|refused" | sed 's/^/  | /'
check "orch plugins lists tinynet" contains "$out" "^model +tinynet +0\.1\.0"
check "with its parameter" contains "$out" "width \(int, default 16\) range: 1..1024"
check "from the example's library" contains "$out" "file: $lib"
check "orch plugins lists the loader centercrop" contains "$out" "^data +centercrop +0\.1\.0"
check "from the loader's library" contains "$out" "file: $loader"
check "and refuses nothing" bash -c "! grep -q refused <<<\"\$1\"" _ "$out"

# 4. A real run: two width configurations, 2 measured CPU steps each.
out=$(cd "$T" && "$ORCH" --db "$T/r.db" --plugin-path "$T/example/build" \
  run "$T/example/tinynet.yaml" 2>&1)
rc=$?
echo "$out" | sed 's/^/  | /'
check "orch run with the out-of-tree model succeeds" test $rc -eq 0
check "both configurations trained" test "$(grep -c 'img/s' <<<"$out")" -ge 2

# 5. The out-of-tree loader on a folder `orch dataset make` writes (2 classes x 12 JPEGs):
# loader-only first (batches timed and counted), then feeding the out-of-tree model.
"$ORCH" dataset make "$T/images" --classes 2 --per-class 12 --seed 1 >"$T/make.log" 2>&1
check "orch dataset make writes a folder" test $? -eq 0
out=$("$ORCH" --plugin-path "$T/example/build" dataset bench \
  --data "{plugin: centercrop, root: $T/images, image_size: 32, workers: 2}" \
  --batch-size 4 --batches 3 --warmup 1 2>&1)
rc=$?
echo "$out" | sed 's/^/  | /'
check "orch dataset bench with the out-of-tree loader succeeds" test $rc -eq 0
check "it took 3 timed batches of 4" contains "$out" "^centercrop: 3 batches of 4 in .* img/s"
images=$(sed -n 's/^ *data\.images = \([0-9]*\)$/\1/p' <<<"$out")
check "the pipeline decoded at least the 16 images taken (${images:-none})" \
  test "${images:-0}" -ge 16
out=$(cd "$T" && "$ORCH" --db "$T/loader.db" --plugin-path "$T/example/build" \
  run "$T/example/centercrop.yaml" "data.root=$T/images" 2>&1)
rc=$?
echo "$out" | sed 's/^/  | /'
check "orch run with the out-of-tree loader and model succeeds" test $rc -eq 0
check "and trained" contains "$out" "img/s"
# The run's stored counters: its 3 steps took at least 3 batches of 8 from the loader.
row=$(sqlite3 "$T/loader.db" "SELECT status, CAST(json_extract(document_json, \
  '$.counters.\"data.images\"') AS INTEGER) FROM runs WHERE experiment = 'centercrop'" 2>&1)
check "the run is stored as ok with data.images >= 24 ($row)" \
  bash -c '[ "${1%%|*}" = ok ] && [ "${1#*|}" -ge 24 ]' _ "$row"

# 6. The installed helper refuses a LibTorch of another major.minor before compiling.
mkdir -p "$T/faketorch"
cat >"$T/faketorch/TorchConfig.cmake" <<'CMAKE'
set(Torch_VERSION 1.13.1)
set(TORCH_LIBRARIES "")
set(TORCH_CXX_FLAGS "")
set(Torch_FOUND TRUE)
CMAKE
"$CMAKE" -S "$T/example" -B "$T/example/build-wrong" -G Ninja \
  -DCMAKE_CXX_COMPILER="$CXX" -DTorch_DIR="$T/faketorch" \
  -DCMAKE_PREFIX_PATH="$T/prefix;$PREFIX_PATH" >"$T/wrong.log" 2>&1
rc=$?
check "another LibTorch fails at configure time" test $rc -ne 0
# CMake wraps long messages: compare with the line breaks and indentation squeezed out.
wrong=$(tr -s ' \n' '  ' <"$T/wrong.log")
check "naming both versions" contains "$wrong" "LibTorch is 1\.13\.1, but orch was built against 2\.[0-9]+"
exit $FAILED
