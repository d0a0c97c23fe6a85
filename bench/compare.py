#!/usr/bin/env python3
"""Pairs orch's bench runs (from its SQLite database) with bench/pytorch_resnet50.py's JSON lines
and prints img/s of both and the ratio orch / PyTorch.

    python3 bench/compare.py bench.db bench-pytorch.jsonl
"""
import json
import sqlite3
import sys

# orch run name (experiment, name) -> PyTorch (precision, stream)
PAIRS = [
    (("bench-resnet50", "fp32"), ("fp32", "device")),
    (("bench-resnet50", "tf32"), ("tf32", "device")),
    (("bench-resnet50", "amp-bf16"), ("amp-bf16", "device")),
    (("bench-resnet50", "amp-fp16"), ("amp-fp16", "device")),
    (("bench-streams", "default/device"), ("amp-bf16", "device")),
    (("bench-streams", "default/pinned"), ("amp-bf16", "pinned")),
    (("bench-streams", "copy-overlap/pinned"), ("amp-bf16", "copy-overlap")),
    (("bench-streams", "cuda-graph/device"), ("amp-bf16", "cuda-graph")),
    (("bench-streams", "multi-stream-2/device"), ("amp-bf16", "multi-stream")),
]


def main() -> None:
    db = sqlite3.connect(sys.argv[1])
    orch = {(e, n): ips for e, n, ips in db.execute(
        "SELECT experiment, name, images_per_s FROM runs WHERE status = 'ok'")}
    py = {}
    for line in open(sys.argv[2]):
        r = json.loads(line)
        py[(r["precision"], r.get("stream", "device"))] = r["images_per_s"]
    print(f"{'orch configuration':<36}{'orch img/s':>12}{'pytorch img/s':>15}{'ratio':>8}")
    for (exp, name), key in PAIRS:
        o, p = orch.get((exp, name)), py.get(key)
        ratio = f"{o / p:.3f}" if o and p else "n/a"
        label = f"{exp}: {name}"
        print(f"{label:<36}{(o or 0):>12.1f}{(p or 0):>15.1f}{ratio:>8}")


if __name__ == "__main__":
    main()
