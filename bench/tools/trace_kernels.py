#!/usr/bin/env python3
"""Where a profiled step spends its GPU time, kernel by kernel.

Reads the Chrome trace a profiled run writes (`trace.json`, or `.json.gz`), sums the device
time of every kernel by name over the profiled steps, and prints a markdown table: each kernel's
calls and milliseconds per step, its share of the kernels' total, and the family it belongs to
(cuDNN's convolutions and GEMMs, orch's batch-norm passes, cuDNN's batch-norm, the optimizer,
copies, the rest), families first. Standard library only, so it runs beside the GPU tests.

    bench/tools/trace_kernels.py TRACE [--steps N] [--top K]

--steps: the profiled steps the trace holds (a run's `profile: {steps: N}`); the per-step
columns divide by it. Kernel time is what the GPU executed, not the step's wall time: the gaps
between kernels (launch latency, host synchronisation) are the difference, printed last.
"""
import argparse
import collections
import gzip
import json
import re
import sys

# Families by kernel name, first match wins. The patterns name what each library calls its
# kernels; a kernel no pattern matches is "other" and is still listed by name.
FAMILIES = [
    ("orch batch-norm", re.compile(r"orch::resnet::kernels::|bn_dx")),
    ("orch max-pool", re.compile(r"max_pool_kernels")),
    ("cuDNN batch-norm", re.compile(r"cudnn::(bn_|batchnorm)|nhwcBatchNorm|bn_fw_|bn_bw_")),
    ("convolution / GEMM (cuDNN graphs included)",
     re.compile(r"xmma|gemm|sm90_|sm100_|cutlass|nvjet|conv|AddPadding|cudnn", re.I)),
    ("optimizer", re.compile(r"multi_tensor|sgd|adam|foreach", re.I)),
    ("pooling", re.compile(r"pool", re.I)),
    ("copy / fill", re.compile(r"copy|fill|memset|memcpy|Memcpy|Memset", re.I)),
    ("element-wise", re.compile(r"elementwise|vectorized|unrolled|reduce", re.I)),
]


def family(name):
    for label, pattern in FAMILIES:
        if pattern.search(name):
            return label
    return "other"


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def kernels(events):
    """(name, microseconds) of every device-side kernel and memory operation in the trace."""
    for e in events:
        if e.get("ph") != "X":
            continue
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"):
            yield e.get("name", "?"), float(e.get("dur", 0.0))


def short(name, width=90):
    name = re.sub(r"\s+", " ", name)
    return name if len(name) <= width else name[: width - 3] + "..."


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args(argv)
    if a.steps < 1:
        p.error("--steps must be at least 1")
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for name, us in kernels(load(a.trace)):
        by_name[name][0] += 1
        by_name[name][1] += us
    if not by_name:
        print(f"{a.trace}: no kernel events (was the run profiled on a GPU?)", file=sys.stderr)
        return 1
    total = sum(us for _, us in by_name.values())
    fams = collections.defaultdict(lambda: [0, 0.0])
    for name, (calls, us) in by_name.items():
        fams[family(name)][0] += calls
        fams[family(name)][1] += us
    n = a.steps
    print(f"Kernel time per step: {total / 1000 / n:.2f} ms over {n} profiled step(s)\n")
    print("| family | kernels per step | ms per step | share |")
    print("|---|---:|---:|---:|")
    for label, (calls, us) in sorted(fams.items(), key=lambda kv: -kv[1][1]):
        print(f"| {label} | {calls / n:.1f} | {us / 1000 / n:.2f} | {100 * us / total:.1f}% |")
    print(f"\n| kernel (top {a.top}) | family | calls per step | ms per step | share |")
    print("|---|---|---:|---:|---:|")
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1][1])
    for name, (calls, us) in ranked[: a.top]:
        print(f"| `{short(name)}` | {family(name)} | {calls / n:.1f} | {us / 1000 / n:.2f} "
              f"| {100 * us / total:.1f}% |")
    print(f"\n| most launched kernels (top 10) | family | calls per step | ms per step |")
    print("|---|---|---:|---:|")
    for name, (calls, us) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[:10]:
        print(f"| `{short(name)}` | {family(name)} | {calls / n:.1f} | {us / 1000 / n:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
