#!/usr/bin/env bash
# Runs ON the GPU machine after scripts/gpu-build.sh: issue #10, fused channels-last batch-norm.
# 1. orch: bench/fused-bn-h200.yaml, 8 runs (bf16/fp16 x fused_bn false/true x stream
#    default/cuda-graph), ResNet50 b256 channels-last, each with 5 profiled steps.
# 2. Python, same invocation: torchvision ResNet50 with torch.compile (mode=default) for each
#    dtype in COMPILE_DTYPES (default "bf16 fp16"; PY_MODES="none default" adds eager Python
#    for reference, ~30 s more); max-autotune only
#    with MAX_AUTOTUNE=1 (it did not finish in 10 minutes on the H200: ANCHORS.md; warm its
#    cache first with bench/run-gpu-max-autotune.sh, whose packed cache this script unpacks when
#    carried in third_party/gpu-bundle/), each Python run under `timeout ${COMPILE_TIMEOUT:-240}`.
# 3. A comparison table (img/s, step ms, kernels/step, launches/step, batch-norm's share of
#    kernel time, top kernel), and the full profile read-back.
# Results in $OUT: fused-bn.{db,log}, fused-bn-python.jsonl, fused-bn-table.txt,
# fused-bn-profile.txt. About 6-8 minutes. Everything stays inside DEADLINE seconds (default
# 570, for one 10-minute device call): orch gets at most ORCH_TIMEOUT (360) s, and each Python
# run at most COMPILE_TIMEOUT (240) s or what is left before the deadline (skipped under 60 s),
# so the table is always printed.
# FBN_YAML picks another experiment (e.g. bench/fused-bn-batch-h200.yaml) and PY_BATCHES the
# PyTorch batches (default "256").
#   usage: bench/run-gpu-fused-bn.sh [orch key=value overrides ...]
#   e.g.   COMPILE_DTYPES=bf16 bench/run-gpu-fused-bn.sh steps.measure=20
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
orch=$(realpath "${ORCH:-./build-gpu/orch}")
python=${PYTHON:-python3}
db="$OUT/fused-bn.db"
rm -f "$db"*

start=$(date +%s)
deadline=$(( start + ${DEADLINE:-570} ))
yaml=${FBN_YAML:-bench/fused-bn-h200.yaml}
experiment=$(sed -n 's/^name: *//p' "$yaml")
timeout "${ORCH_TIMEOUT:-360}" "$orch" --db "$db" run "$yaml" "$@" 2>&1 \
  | tee "$OUT/fused-bn.log"
orch_status=${PIPESTATUS[0]}
echo "orch: $(( $(date +%s) - start )) s, exit $orch_status"

py="$OUT/fused-bn-python.jsonl"
: > "$py"
# A compiler cache warmed by bench/run-gpu-max-autotune.sh in earlier calls, when carried: the
# max-autotune runs then start from its autotuning results instead of from scratch.
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/orch-inductor-cache}
bench/unpack-inductor-cache.sh "$TORCHINDUCTOR_CACHE_DIR"
for batch in ${PY_BATCHES-256}; do
for dtype in ${COMPILE_DTYPES-bf16 fp16}; do
  for mode in ${PY_MODES-default} ${MAX_AUTOTUNE:+max-autotune}; do
    t0=$(date +%s)
    left=$(( deadline - t0 - 15 ))  # 15 s kept for the table
    limit=$(( left < ${COMPILE_TIMEOUT:-240} ? left : ${COMPILE_TIMEOUT:-240} ))
    if (( limit < 60 )); then
      echo "{\"side\": \"pytorch\", \"precision\": \"amp-$dtype\", \"batch\": $batch, \"compile\": \"$mode\", \"error\": \"skipped: ${left} s left before DEADLINE\"}" >> "$py"
      continue
    fi
    timeout "$limit" "$python" bench/pytorch_resnet50.py --precision "amp-$dtype" \
      --channels-last --batch "$batch" --compile "$mode" >> "$py" \
      || echo "{\"side\": \"pytorch\", \"precision\": \"amp-$dtype\", \"batch\": $batch, \"compile\": \"$mode\", \"error\": \"exit $? (124: stopped after $limit s)\"}" >> "$py"
    echo "python amp-$dtype b$batch compile=$mode: $(( $(date +%s) - t0 )) s"
  done
done
done

"$python" - "$db" "$py" "$experiment" <<'PY' | tee "$OUT/fused-bn-table.txt"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(f"{'configuration':<44}{'img/s':>9}{'step ms':>9}{'kern/step':>10}{'launch/step':>12}"
      f"{'BN share':>9}  top kernel")
rows = db.execute(
    "SELECT r.id, r.name, r.status, r.images_per_s, r.error, p.step_ms, p.kernels_per_step, "
    "p.cuda_launches_per_step FROM runs r LEFT JOIN run_profile p ON p.run_id = r.id "
    "WHERE r.experiment = ? ORDER BY r.id", (sys.argv[3],)).fetchall()
base = {}
for run_id, name, status, ips, error, step_ms, kps, launches in rows:
    if status != "ok":
        print(f"orch {name:<39} {status}: {error}")
        continue
    ops = db.execute("SELECT name, share FROM run_profile_ops WHERE run_id = ? AND kind = 'kernel' "
                     "ORDER BY position", (run_id,)).fetchall()
    bn = sum(s for n, s in ops
             if "batch_norm" in n or "batchnorm" in n or "orch::resnet::kernels" in n)
    top = f"{ops[0][0][:60]} {ops[0][1]:.1%}" if ops else "n/a"
    f = lambda v, w, p: f"{v:>{w}.{p}f}" if v is not None else f"{'n/a':>{w}}"
    print(f"orch {name:<39}{ips:>9.1f}{f(step_ms, 9, 2)}{f(kps, 10, 0)}{f(launches, 12, 0)}"
          f"{bn:>9.1%}  {top}")
    base[name] = ips
for line in open(sys.argv[2]):
    r = json.loads(line)
    label = f"pytorch {r['precision']} b{r.get('batch', 256)} compile={r.get('compile')}"
    if "error" in r:
        print(f"{label:<44} {r['error']}")
        continue
    first = r.get("first_step_s")
    note = f"  first step {first:.0f} s (compilation)" if first else ""
    print(f"{label:<44}{r['images_per_s']:>9.1f}{r['step_ms']:>9.2f}{'':>10}{'':>12}{'':>9}{note}")
print("BN share: share of kernel time of ATen's batch_norm_* kernels, cuDNN's batchnorm_* and "
      "our fused kernels (orch::resnet::kernels) among the stored top kernels, so a lower bound.")
PY
"$python" bench/read_profile.py "$db" > "$OUT/fused-bn-profile.txt" 2>&1 || true
echo "total: $(( $(date +%s) - start )) s"
exit $orch_status
