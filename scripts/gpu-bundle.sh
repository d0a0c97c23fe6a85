#!/usr/bin/env bash
# Prepares what the air-gapped GPU machine lacks (see shared/DEVICE.md): it has LibTorch,
# CUDA, yaml-cpp, Boost and libjpeg-turbo, but no sqlite3.h, CLI11, nlohmann-json, fmt,
# xxhash or Catch2 v2; libpng's headers (and zlib's, which CMake's FindPNG needs) come along in
# case it lacks them too. Their Debian packages are downloaded here and unpacked into a private
# prefix, third_party/gpu-bundle/prefix (git-ignored), which the device tool carries over and
# scripts/gpu-build.sh puts first on CMAKE_PREFIX_PATH. Nothing is installed into /.
#
# cudnn-frontend's headers (the resnet model's fused backward graph) come along too, from the
# per-user cache (scripts/cudnn-frontend.sh fetches them there if missing), in
# third_party/gpu-bundle/cudnn-frontend/include, where scripts/gpu-build.sh points CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
out=third_party/gpu-bundle
pkgs=(libsqlite3-dev libsqlite3-0 libcli11-dev nlohmann-json3-dev libfmt-dev libfmt9 libxxhash-dev catch2
      libpng-dev libpng16-16 zlib1g-dev zlib1g)

# Its own check, so a bundle made before the frontend was needed gains it without a rebuild.
if [ ! -f "$out/cudnn-frontend/include/cudnn_frontend.h" ]; then
  fe_include=$(bash scripts/cudnn-frontend.sh | sed -n 's/^ORCH_CUDNN_FRONTEND_INCLUDE_DIR=//p')
  rm -rf "$out/cudnn-frontend"
  mkdir -p "$out/cudnn-frontend"
  cp -r "$fe_include" "$out/cudnn-frontend/include"
  echo "gpu-bundle: cudnn-frontend headers in $out/cudnn-frontend/include"
fi

if [ -f "$out/prefix/.complete" ]; then
  echo "gpu-bundle: $out/prefix already complete"
  exit 0
fi
rm -rf "$out/prefix" "$out/debs"
mkdir -p "$out/debs" "$out/prefix"
(cd "$out/debs" && apt-get download "${pkgs[@]}" >/dev/null)
for deb in "$out"/debs/*.deb; do dpkg -x "$deb" "$out/prefix"; done
# Documentation is dead weight for the 64 MiB the device tool carries.
rm -rf "$out/prefix/usr/share/doc" "$out/prefix/usr/share/man" "$out/debs"
# Plugins are shared objects: CMake must find zlib's shared library (zlib1g's, beside the
# dev package's symlink), never the static archive, which is not position-independent.
# The dev package's libz.so points at an absolute /lib path that another distribution's zlib
# does not have: point it at the bundle's own copy.
rm -f "$out"/prefix/usr/lib/x86_64-linux-gnu/libz.a
ln -sf "../../../lib/x86_64-linux-gnu/$(basename "$(readlink "$out"/prefix/usr/lib/x86_64-linux-gnu/libz.so)")" \
  "$out"/prefix/usr/lib/x86_64-linux-gnu/libz.so
touch "$out/prefix/.complete"
du -sh "$out/prefix" "$out/cudnn-frontend"
