#!/usr/bin/env bash
# Runs ON the GPU machine, in the snapshot after scripts/gpu-snapshot.sh: `conv_bn_stats`'
# first GPU run (issue #10; plugins/model/resnet/conv_bn.h), one device call (~6 minutes after
# the build):
#   1. the GPU tests of what it touches, a process per case: [conv_bn] (the new path against
#      an fp32 reference, fallbacks, CUDA graph replay, whole ResNet50s), [fused_bn] and
#      [residual_grad] (fused_bn.cpp's function and residual_grad.cpp's backward changed);
#   2. bench/conv-bn-stats-h200.yaml (fp16 b256 / b768, conv_bn_stats off / on, 2 repeats),
#      whose ranking orch prints, and the profile of each run (bench/read_profile.py).
# Results: $OUT/gpu-tests.txt, $OUT/conv-bn.{db,log}, $OUT/conv-bn-paths.txt (each run's
# model.* counters: which path its calls took), $OUT/conv-bn-profile.txt.
# Ran on the H200 on 2026-11-30 (README, "conv_bn_stats, end to end"): ~90 s after the build.
# TESTS and TEST_LIMIT override the test spec and the per-case limit.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
start=$(date +%s)
scripts/gpu-tests-isolated.sh "${TESTS:-[conv_bn],[fused_bn],[residual_grad]}" "${TEST_LIMIT:-180}" > /dev/null 2>&1
cat "$OUT/gpu-tests.txt"
echo "== tests: $(( $(date +%s) - start )) s"
db="$OUT/conv-bn.db"
rm -f "$db"*
timeout "${ORCH_TIMEOUT:-420}" ./build-gpu/orch --db "$db" run bench/conv-bn-stats-h200.yaml \
  > "$OUT/conv-bn.log" 2>&1 || echo "orch exit $?"
tail -n 40 "$OUT/conv-bn.log"
# Which path each run's calls took (the resnet's model.* counters): conv_bn_stats.taken must
# be 48 per forward call with the option on, fallback 0.
python3 - "$db" <<'PY' | tee "$OUT/conv-bn-paths.txt"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for name, status, doc in db.execute("SELECT name, status, document_json FROM runs ORDER BY id"):
    counters = json.loads(doc).get("counters", {}) if doc else {}
    paths = {k[len("model."):]: v for k, v in counters.items() if k.startswith("model.")}
    print(f"{name:<28} {status:<6} {paths}")
PY
python3 bench/read_profile.py "$db" > "$OUT/conv-bn-profile.txt" 2>&1 || true
rm -rf "$db.runs"  # the traces: too many files to bring back
echo "== total: $(( $(date +%s) - start )) s"
