#!/usr/bin/env bash
# Runs ON the GPU machine after scripts/gpu-build.sh: the same ResNet50 configurations through
# orch and through PyTorch's Python API, in one invocation on one GPU, and prints both img/s
# and the ratio. Results go to $OUT/bench.{db,log,jsonl}.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
orch=./build-gpu/orch
rm -f "$OUT/bench.db"*
$orch --db "$OUT/bench.db" run bench/resnet50-h200.yaml 2>&1 | tee "$OUT/bench-orch.log"
$orch --db "$OUT/bench.db" run bench/resnet50-streams-h200.yaml 2>&1 | tee -a "$OUT/bench-orch.log"
: > "$OUT/bench-pytorch.jsonl"
for p in fp32 tf32 amp-bf16 amp-fp16; do
  python3 bench/pytorch_resnet50.py --precision $p --channels-last | tee -a "$OUT/bench-pytorch.jsonl"
done
python3 - "$OUT/bench.db" "$OUT/bench-pytorch.jsonl" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
orch = {}
for name, ips in db.execute(
        "SELECT name, images_per_s FROM runs WHERE status='ok' AND experiment='bench-resnet50'"):
    orch[name] = ips
print(f"{'configuration':<28}{'orch img/s':>12}{'pytorch img/s':>15}{'ratio':>8}")
for line in open(sys.argv[2]):
    r = json.loads(line)
    key = r["precision"]  # orch's run names: fp32, tf32, amp-bf16, amp-fp16
    o = orch.get(key)
    ratio = f"{o / r['images_per_s']:.3f}" if o else "n/a"
    print(f"{key:<28}{(o or 0):>12.1f}{r['images_per_s']:>15.1f}{ratio:>8}")
PY
