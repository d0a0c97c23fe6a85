#!/usr/bin/env bash
# Runs ON the GPU machine: torch.compile(mode="max-autotune") for issue #10's comparison, over
# more than one device call. Its compilation (autotuning every convolution and matmul) did not
# finish within one 10-minute call on the H200, and each call starts on a bare machine, so the
# compiler's cache travels between calls: Inductor writes its FX-graph, autotuning and Triton
# caches under TORCHINDUCTOR_CACHE_DIR as each piece is done, and this script packs that folder
# into $OUT/inductor-cache.tgz.part-aa, -ab, ... (15 MiB pieces: the device tool returns files
# of at most 16 MiB, 8 files a call) at the end whether or not the run finished. Put the pieces
# in third_party/gpu-bundle/ (carried, 64 MiB a call with everything else) for the next call,
# which unpacks them and goes on from there.
#   call 1:  bench/run-gpu-max-autotune.sh
#   call 2:  cp <files_at>/inductor-cache.tgz.part-* third_party/gpu-bundle/ (here), then the
#            same command on the device; it prints "cache: N files from the bundle" first.
# Measured 2026-11-30 on the H200: the packed cache was ~100 MB (19,445 files after the first
# call), over what a call can carry, so the pieces did not help; what worked was the device
# tool's warm machine: a call made within its idle time (30 s) lands on the same machine,
# where the cache under /tmp survives. Call 1 stopped after 526 s (autotuning the backward's
# matmuls), call 2 finished (first step 58.8 s, 6,988.2 img/s bf16 b256), and a third call's
# first step took 23.3 s from the cache.
# PACK=slim packs only what a cache hit needs,
# so the cache may fit the carry and outlive the machine (kept beside the checkout, it can
# serve later sessions too): the FX-graph and AOTAutograd entries (each compiled graph's
# Python code, with the chosen kernels' Triton source inline), the autotuning results
# (cache/) and the .best_config files, but not Triton's binaries (triton/: every candidate
# compiled while autotuning; a hit recompiles only the chosen kernels from their source) nor
# the candidates' generated .py files. It prints what each top folder held, so the next call
# can tell whether the hit then skips autotuning (first step in seconds, not minutes).
# Ran 2026-11-30: fp16 compilations stopped at 470 s packed slim to 30 and 32 MiB. One carried to
# a fresh H200 (PACK=0 LIMIT=230 DTYPES=fp16 BATCH=256, "103 files after unpacking 1 carried
# pack(s)") finished in 224 s (first step 200.8 s, 6,846.0 img/s) instead of ~528 s from
# scratch: the autotuning done before packing is kept; the chosen kernels and the rest still
# compile again, so the first step takes minutes, not seconds.
# Env: LIMIT (seconds for the Python run, default 480), DTYPES (default "bf16"), BATCH (256),
# PYTHON, PACK (1: all; slim: as above; 0: leave the cache in /tmp for the next call on the
# same machine, no pieces), PACK_NAME (the pieces' name, default inductor-cache: give each
# pack of a call its own, e.g. one per GPU; bench/unpack-inductor-cache.sh merges them all). The result lines go to $OUT/max-autotune.jsonl (an "error" line
# when it was stopped).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
python=${PYTHON:-python3}
cache=${TORCHINDUCTOR_CACHE_DIR:-/tmp/orch-inductor-cache}
export TORCHINDUCTOR_CACHE_DIR=$cache
export TORCHINDUCTOR_FX_GRAPH_CACHE=1 TORCHINDUCTOR_AUTOGRAD_CACHE=1
mkdir -p "$cache"
bench/unpack-inductor-cache.sh "$cache"
start=$(date +%s)
for dtype in ${DTYPES:-bf16}; do
  left=$(( ${LIMIT:-480} - ($(date +%s) - start) ))
  if (( left < 30 )); then
    echo "{\"side\": \"pytorch\", \"precision\": \"amp-$dtype\", \"batch\": ${BATCH:-256}, \"compile\": \"max-autotune\", \"error\": \"skipped: ${left} s left\"}" >> "$OUT/max-autotune.jsonl"
    continue
  fi
  t0=$(date +%s)
  timeout "$left" "$python" bench/pytorch_resnet50.py --precision "amp-$dtype" --channels-last \
    --batch "${BATCH:-256}" --compile max-autotune >> "$OUT/max-autotune.jsonl" \
    || echo "{\"side\": \"pytorch\", \"precision\": \"amp-$dtype\", \"batch\": ${BATCH:-256}, \"compile\": \"max-autotune\", \"error\": \"exit $? after $(( $(date +%s) - t0 )) s (124: stopped by the time limit)\"}" >> "$OUT/max-autotune.jsonl"
  echo "max-autotune amp-$dtype: $(( $(date +%s) - t0 )) s"
done
if [[ ${PACK:-1} == 0 ]]; then  # the next call reuses this machine's /tmp instead (above)
  echo "cache: $(find "$cache" -type f | wc -l) files left in $cache (PACK=0)"
  cat "$OUT/max-autotune.jsonl"
  exit 0
fi
name=${PACK_NAME:-inductor-cache}
rm -f "$OUT/$name".tgz.part-*
echo "cache by top folder:"; du -s --block-size=1M "$cache"/* 2>/dev/null | sort -n | tail -8
if [[ ${PACK:-1} == slim ]]; then
  (cd "$cache" && find . \( -path ./triton -o -path ./locks \) -prune -o -type f \
     ! -regex '\./[^/][^/]/[^/]*\.py' -print) > /tmp/orch-cache-files
  echo "cache: slim, $(wc -l < /tmp/orch-cache-files) of $(find "$cache" -type f | wc -l) files"
  tar -cz -C "$cache" -T /tmp/orch-cache-files | split -b 15M - "$OUT/$name.tgz.part-"
else
  tar -cz -C "$cache" . | split -b 15M - "$OUT/$name.tgz.part-"
fi
packed=$(cat "$OUT/$name".tgz.part-* | wc -c)
echo "cache: $(find "$cache" -type f | wc -l) files, $(( packed / 1048576 )) MiB packed in" \
  "$(ls "$OUT/$name".tgz.part-* | wc -l) pieces"
(( packed > 48 * 1048576 )) && echo "cache: over 48 MiB, too large to carry with the bundle"
cat "$OUT/max-autotune.jsonl"
