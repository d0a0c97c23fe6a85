#!/usr/bin/env python3
"""GPU kernel time per model operation, from Kineto traces of eager runs (orch's profile:
trace.json), and the difference between two traces. The stored profile keeps the top kernels
by name only; this says WHICH layer a kernel belongs to: each kernel is charged to the
outermost operator on the launching thread (aten::conv2d, aten::batch_norm, autograd's
"evaluate_function: ConvolutionBackward0", ...) and that operator's occurrence in its step
(the 3rd aten::conv2d of a ResNet50 step is always the same layer), averaged over the
profiled steps. With two traces (e.g. the same model in fp16 and in bf16) the rows are joined
on (operator, occurrence) and sorted by the difference, so a layer one dtype runs slowly, or
through another implementation, stands out.
    python3 bench/kernel_by_op.py TRACE.json                 # top rows of one trace
    python3 bench/kernel_by_op.py A.json B.json [--top N]    # A vs B per layer
Needs traces of an eager step (stream: default): a CUDA graph's kernels have no launching
operator."""
import argparse
import bisect
import collections
import json


def load(path):
    events = json.load(open(path)).get("traceEvents", [])
    ops = collections.defaultdict(list)  # tid -> [(start, end, name)] of CPU operators
    launches = {}  # correlation -> (tid, ts) of the runtime call that launched it
    kernels = []  # (correlation, name, dur us)
    steps = []  # (start, end) of ProfilerStep#k scopes
    for e in events:
        cat = e.get("cat", "")
        ts, dur = float(e.get("ts", 0) or 0), float(e.get("dur", 0) or 0)
        args = e.get("args", {}) or {}
        if cat == "cpu_op":
            ops[e.get("tid")].append((ts, ts + dur, e.get("name", "?")))
        elif cat == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#"):
            steps.append((ts, ts + dur))
        elif cat in ("cuda_runtime", "cuda_driver") and "correlation" in args:
            launches[args["correlation"]] = (e.get("tid"), ts)
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            kernels.append((args.get("correlation"), e.get("name", "?"), dur))
    for v in ops.values():
        v.sort()
    steps.sort()
    return ops, launches, kernels, steps


def outermost(ops_of_thread, ts):
    """The longest-running CPU operator on this thread that encloses ts (the first started)."""
    i = bisect.bisect_right(ops_of_thread, (ts, float("inf"), ""))
    best = None
    # Operators start in order; the outermost encloser starts earliest. Scan back a bounded way.
    for j in range(i - 1, max(-1, i - 4000), -1):
        s, e, name = ops_of_thread[j]
        if s <= ts <= e:
            best = (s, e, name)
    return best


def per_layer(path):
    ops, launches, kernels, steps = load(path)
    if not steps:
        raise SystemExit(f"{path}: no ProfilerStep# scopes")
    # occurrence index of each outermost operator within its step
    occurrence = {}
    for tid, v in ops.items():
        counts = collections.Counter()
        step_of = None
        for s, e, name in v:
            k = bisect.bisect_right(steps, (s, float("inf"))) - 1
            if k < 0 or s > steps[k][1]:
                continue
            if k != step_of:
                counts, step_of = collections.Counter(), k
            occurrence[(tid, s, e, name)] = counts[name]
            counts[name] += 1
    rows = collections.defaultdict(lambda: [0.0, collections.Counter()])
    unassigned = 0.0
    for corr, kname, dur in kernels:
        where = launches.get(corr)
        op = outermost(ops.get(where[0], []), where[1]) if where else None
        if op is None:
            unassigned += dur
            continue
        idx = occurrence.get((where[0],) + op)
        if idx is None:
            unassigned += dur
            continue
        key = (op[2], idx)
        rows[key][0] += dur
        rows[key][1][kname] += dur
    n = len(steps)
    return {k: (v[0] / n / 1000.0, v[1]) for k, v in rows.items()}, unassigned / n / 1000.0


def short(name, width=70):
    return name if len(name) <= width else name[: width - 3] + "..."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    if len(a.traces) == 1:
        rows, un = per_layer(a.traces[0])
        total = sum(v[0] for v in rows.values())
        print(f"{a.traces[0]}: {total:.2f} ms of kernels a step charged to operators, "
              f"{un:.2f} ms unassigned")
        for (name, idx), (ms, ks) in sorted(rows.items(), key=lambda r: -r[1][0])[: a.top]:
            print(f"{ms:8.3f} ms  {short(name, 60)} #{idx}  <- {short(ks.most_common(1)[0][0])}")
        return
    (ra, ua), (rb, ub) = per_layer(a.traces[0]), per_layer(a.traces[1])
    ta, tb = sum(v[0] for v in ra.values()), sum(v[0] for v in rb.values())
    print(f"A {a.traces[0]}: {ta:.2f} ms/step of kernels ({ua:.2f} unassigned)")
    print(f"B {a.traces[1]}: {tb:.2f} ms/step of kernels ({ub:.2f} unassigned)")
    keys = set(ra) | set(rb)
    diff = sorted(keys, key=lambda k: -abs(rb.get(k, (0,))[0] - ra.get(k, (0,))[0]))
    print(f"{'A ms':>8} {'B ms':>8} {'B-A':>8}  operator #occurrence: A's top kernel | B's")
    for k in diff[: a.top]:
        ma, ka = ra.get(k, (0.0, collections.Counter()))
        mb, kb = rb.get(k, (0.0, collections.Counter()))
        top_a = short(ka.most_common(1)[0][0], 60) if ka else "-"
        top_b = short(kb.most_common(1)[0][0], 60) if kb else "-"
        print(f"{ma:8.3f} {mb:8.3f} {mb - ma:+8.3f}  {short(k[0], 50)} #{k[1]}: {top_a} | {top_b}")
    # per operator name (all occurrences) for the broad picture
    print("\nper operator (all occurrences):")
    agg = collections.defaultdict(lambda: [0.0, 0.0])
    for k, (ms, _) in ra.items():
        agg[k[0]][0] += ms
    for k, (ms, _) in rb.items():
        agg[k[0]][1] += ms
    for name, (x, y) in sorted(agg.items(), key=lambda r: -abs(r[1][1] - r[1][0]))[:20]:
        print(f"{x:8.3f} {y:8.3f} {y - x:+8.3f}  {short(name, 80)}")


if __name__ == "__main__":
    main()
