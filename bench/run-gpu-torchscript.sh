#!/usr/bin/env bash
# Runs ON the GPU machine after scripts/gpu-build.sh: issue #11's "bring your own model" cost.
# Exports torchvision's ResNet50 to TorchScript (scripts/export_torchscript.py, random weights),
# then trains it through orch's `torchscript` model and orch's own `resnet` model with the same
# configuration (bench/torchscript-h200.yaml: AMP bf16, channels-last, batch 256, synthetic
# data, 15 warm-up + 40 measured steps, 3 repeats each), and prints both img/s and the ratio.
# Results: $OUT/resnet50.pt, $OUT/torchscript.{db,log}, $OUT/torchscript-table.txt.
#   usage: bench/run-gpu-torchscript.sh [key=value ...]   (overrides for both models; ~2 minutes)
#   e.g. on a CPU, to check the script itself:
#     ORCH=build/orch PYTHON=~/.cache/orch/venv-torch-2.11.0/bin/python \
#       bench/run-gpu-torchscript.sh device=cpu batch_size=4 data.image_size=64 \
#       steps.warmup=1 steps.measure=2 repeat=1 cudnn_benchmark=off
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
orch=$(realpath "${ORCH:-./build-gpu/orch}")
python=${PYTHON:-python3}

"$python" scripts/export_torchscript.py --model resnet50 --out "$OUT/resnet50.pt" \
  --num-classes 1000 --image-size 224 | tee "$OUT/torchscript-export.log"
rm -f "$OUT/torchscript.db"*
# In $OUT, so the experiment's relative `path: resnet50.pt` finds the archive.
status=0
(cd "$OUT" && "$orch" --db "$OUT/torchscript.db" run "$repo/bench/torchscript-h200.yaml" "$@") \
  2>&1 | tee "$OUT/torchscript.log" || status=$?

"$python" - "$OUT/torchscript.db" <<'PY' | tee "$OUT/torchscript-table.txt"
import sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT model, repeat, status, images_per_s, error FROM runs "
                  "WHERE experiment = 'bench-torchscript' ORDER BY model, repeat").fetchall()
ips = {}
for model, repeat, status, v, error in rows:
    if status == "ok":
        ips.setdefault(model, []).append(v)
    else:
        print(f"{model} repeat {repeat}: {status}: {error}")
print(f"{'model':<14}{'runs':>5}{'img/s (median)':>16}   each")
for model in ("resnet", "torchscript"):
    v = ips.get(model, [])
    med = f"{statistics.median(v):.1f}" if v else "n/a"
    print(f"{model:<14}{len(v):>5}{med:>16}   " + ", ".join(f"{x:.1f}" for x in v))
if ips.get("resnet") and ips.get("torchscript"):
    r = statistics.median(ips["torchscript"]) / statistics.median(ips["resnet"])
    print(f"ratio torchscript / resnet: {r:.3f}")
else:
    print("ratio torchscript / resnet: n/a (a model has no successful run)")
    sys.exit(1)
PY
exit $status
