#!/usr/bin/env bash
# Runs ON a two-GPU machine (device kind nvidia-h200-x2): issue #10's closing comparison for one
# dtype, orch's best configuration against torch.compile's default and max-autotune modes at
# batch 256 and 768, in one invocation, over two device calls on the same warm machine (the
# second within the device's idle time, ~30 s, so /tmp survives). max-autotune's compilation
# takes ~9-10 minutes per shape from scratch, more than one call, so:
#   call 1 (fresh):  bench/run-gpu-compare-x2.sh compile DTYPE
#       builds the committed state (scripts/gpu-snapshot.sh, niced, beside the compilations;
#       needs third_party/gpu-bundle/snap.tar carried) and compiles DTYPE:256 on GPU 0 and
#       DTYPE:768 on GPU 1 (bench/run-gpu-max-autotune-x2.sh, stopped at LIMIT, default 470 s;
#       slim packs come back in $OUT/g0, $OUT/g1 for later sessions).
#   call 2 (warm):   bench/run-gpu-compare-x2.sh compare DTYPE
#       finishes both compilations side by side (PACK=0, LIMIT 230 s), merges the two caches,
#       then on GPU 0 alone, one after the other: orch (bench/fused-bn-final-h200.yaml at
#       DTYPE, batch 256 and 768) and PyTorch, default mode and max-autotune from the cache
#       (bench/run-gpu-fused-bn.sh). The table is $OUT/cmp/fused-bn-table.txt, all in cmp.tgz.
# What was done by hand for fp16 on 2026-11-30 (README, "Fused batch-norm against
# torch.compile": call 1 477 s, call 2 333 s), made one script; it ran bf16 that way the same
# night (call 1 491 s with AFTER_TESTS, call 2 with LIMIT=200 DEADLINE=290: 312 s).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
phase=${1:?usage: $0 compile|compare DTYPE} dtype=${2:?usage: $0 compile|compare DTYPE}
mkdir -p "$OUT"
case $phase in
  compile)
    (export OUT=/tmp/orch-build-out; nice -n 19 scripts/gpu-snapshot.sh > /tmp/orch-build-tail.txt 2>&1) &
    build=$!
    LIMIT=${LIMIT:-470} bench/run-gpu-max-autotune-x2.sh "$dtype:256" "$dtype:768" > "$OUT/x2-tail.txt" 2>&1
    wait "$build"
    cat /tmp/orch-build-tail.txt "$OUT/x2-tail.txt"
    # AFTER_TESTS (optional, Catch test names, ';'-separated): GPU tests run on GPU 0 once the
    # compilations have stopped (nothing else on the GPUs then), each in its own process
    # (60 s), their whole output kept in tests.txt - a way to use the compile call's tail.
    : > "$OUT/tests.txt"
    if [[ -n ${AFTER_TESTS:-} ]]; then
      IFS=';' read -ra names <<< "$AFTER_TESTS"
      for name in "${names[@]}"; do
        (cd /tmp/snap && CUDA_VISIBLE_DEVICES=0 timeout 60 ./build-gpu/tests/orch_gpu_tests "$name") >> "$OUT/tests.txt" 2>&1
        echo "== exit $? for: $name" | tee -a "$OUT/tests.txt"
      done
    fi
    # Logs in one file: the device returns at most 8, and the packs take six.
    tar -czf "$OUT/compile-logs.tgz" -C "$OUT" g0.log g1.log g0/max-autotune.jsonl g1/max-autotune.jsonl tests.txt
    rm -f "$OUT"/g0.log "$OUT"/g1.log "$OUT"/g0/max-autotune.jsonl "$OUT"/g1/max-autotune.jsonl "$OUT"/tests.txt
    ;;
  compare)
    [[ -x /tmp/snap/build-gpu/orch ]] || { echo "no /tmp/snap build: not the machine of call 1?" >&2; exit 2; }
    PACK=0 LIMIT=${LIMIT:-230} OUT=/tmp/orch-finish bench/run-gpu-max-autotune-x2.sh "$dtype:256" "$dtype:768" > "$OUT/finish.txt" 2>&1
    cat "$OUT/finish.txt"
    cp -r --update=none /tmp/orch-inductor-g1/. /tmp/orch-inductor-g0/
    (cd /tmp/snap && CUDA_VISIBLE_DEVICES=0 TORCHINDUCTOR_CACHE_DIR=/tmp/orch-inductor-g0 \
      TORCHINDUCTOR_FX_GRAPH_CACHE=1 TORCHINDUCTOR_AUTOGRAD_CACHE=1 OUT=/tmp/orch-cmp \
      DEADLINE=${DEADLINE:-320} ORCH_TIMEOUT=120 MAX_AUTOTUNE=1 COMPILE_DTYPES=$dtype PY_BATCHES="256 768" \
      FBN_YAML=bench/fused-bn-final-h200.yaml bench/run-gpu-fused-bn.sh \
      "precision={plugin: amp, dtype: $dtype}" 'batch_size=[256, 768]') > /tmp/orch-cmp.log 2>&1
    tail -n 30 /tmp/orch-cmp.log
    mkdir -p /tmp/orch-cmp && cp /tmp/orch-cmp.log /tmp/orch-cmp/
    rm -rf /tmp/orch-cmp/*.runs
    tar -czf "$OUT/cmp.tgz" -C /tmp orch-cmp orch-finish
    ;;
  *) echo "usage: $0 compile|compare DTYPE" >&2; exit 2 ;;
esac
