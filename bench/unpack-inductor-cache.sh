#!/usr/bin/env bash
# Unpacks every Inductor cache packed by bench/run-gpu-max-autotune.sh and carried in
# third_party/gpu-bundle/ (NAME.tgz.part-aa, -ab, ... per pack; several packs, e.g. one per
# GPU or per session, merge: their files are named by content hashes) into the folder given.
# Prints how many files the folder then holds; nothing carried is not an error.
#   usage: bench/unpack-inductor-cache.sh CACHE_DIR
set -euo pipefail
cache=$1
mkdir -p "$cache"
shopt -s nullglob
packs=0
for first in third_party/gpu-bundle/*.tgz.part-aa; do
  cat "${first%aa}"* | tar -xz -C "$cache"
  packs=$((packs + 1))
done
if (( packs )); then
  echo "cache: $(find "$cache" -type f | wc -l) files after unpacking $packs carried pack(s)"
else
  echo "cache: none carried"
fi
