#!/usr/bin/env python3
"""Where a profiled step spends its GPU time, kernel by kernel.

Reads the Chrome trace a profiled run writes (`trace.json`, or `.json.gz`), sums the device
time of every kernel by name over the profiled steps, and prints a markdown table: each kernel's
calls and milliseconds per step, its share of the kernels' total, and the family it belongs to
(cuDNN's convolutions and GEMMs, orch's batch-norm passes, cuDNN's batch-norm, the optimizer,
copies, the rest), families first. Standard library only, so it runs beside the GPU tests.

    bench/tools/trace_kernels.py TRACE [--steps N] [--top K] [--by-op FAMILY]

--steps: the profiled steps the trace holds (a run's `profile: {steps: N}`); the per-step
columns divide by it. Kernel time is what the GPU executed, not the step's wall time: the gaps
between kernels (launch latency, host synchronisation) are the difference, printed last.
--by-op FAMILY: the kernels of the families whose label contains FAMILY ("copy", "batch-norm")
also by the CPU operator that launched them (the trace's "External id" links a kernel to its
ATen or autograd op). Profile a step without a CUDA graph for this: a replayed graph's kernels
all hang off the replay.
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


DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")
NO_OP = "(no CPU operator: a graph replay or a library's own launch)"


def kernels(events):
    """(name, microseconds) of every device-side kernel and memory operation in the trace."""
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS:
            yield e.get("name", "?"), float(e.get("dur", 0.0))


def launching_ops(events):
    """(operator, kernel name, microseconds) of every device event: the operator is the CPU op
    whose "External id" the kernel carries, or its runtime call's (matched by "correlation")."""
    op_of_external = {}
    external_of_correlation = {}
    for e in events:
        args = e.get("args") or {}
        if e.get("ph") != "X" or e.get("cat") in DEVICE_CATS:
            continue
        if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in args:
            op_of_external.setdefault(args["External id"], e.get("name", "?"))
        elif "correlation" in args and "External id" in args:
            external_of_correlation[args["correlation"]] = args["External id"]
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in DEVICE_CATS:
            continue
        args = e.get("args") or {}
        ext = args.get("External id", external_of_correlation.get(args.get("correlation")))
        yield op_of_external.get(ext, NO_OP), e.get("name", "?"), float(e.get("dur", 0.0))


def print_by_op(events, wanted, n):
    rows = collections.defaultdict(lambda: [0, 0.0])
    for op, name, us in launching_ops(events):
        if wanted in family(name):
            rows[(op, name)][0] += 1
            rows[(op, name)][1] += us
    print(f"\n| CPU operator (kernels of families matching '{wanted}') | kernel | calls per step "
          "| ms per step |")
    print("|---|---|---:|---:|")
    for (op, name), (calls, us) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
        print(f"| {short(op, 60)} | `{short(name, 60)}` | {calls / n:.1f} | {us / 1000 / n:.3f} |")


def short(name, width=90):
    name = re.sub(r"\s+", " ", name)
    return name if len(name) <= width else name[: width - 3] + "..."


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--by-op", default=None, metavar="FAMILY")
    a = p.parse_args(argv)
    if a.steps < 1:
        p.error("--steps must be at least 1")
    events = load(a.trace)
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for name, us in kernels(events):
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
    if a.by_op is not None:
        print_by_op(events, a.by_op, n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
