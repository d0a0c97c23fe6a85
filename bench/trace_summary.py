#!/usr/bin/env python3
"""Summarises Kineto traces (orch's profile: trace.json) by what the stored profile leaves out:
every thread's CUDA runtime calls (cudaMalloc, cudaFree, synchronisations: the calls that
stall other threads' work), the same per thread (which thread waits on what, e.g. a loader's
producer blocked in cudaStreamSynchronize while a graph-captured step fills the GPU), and the
GPU's kernels and copies per stream, so a data loader's GPU work can be told from the
training step's.
    python3 bench/trace_summary.py TRACE.json [TRACE.json ...]"""
import collections
import json
import sys


def summarise(path, top=12):
    events = json.load(open(path)).get("traceEvents", [])
    runtime = collections.defaultdict(lambda: [0, 0.0])  # name -> calls, total us
    per_thread = collections.defaultdict(lambda: [0, 0.0])  # (tid, name) -> calls, total us
    per_stream = collections.defaultdict(lambda: [0, 0.0])  # (stream, category) -> n, us
    kernels = collections.defaultdict(lambda: [0, 0.0])  # (stream, name) -> n, us
    span = [float("inf"), 0.0]
    for e in events:
        cat, dur = e.get("cat", ""), float(e.get("dur", 0) or 0)
        if cat in ("cuda_runtime", "cuda_driver"):
            r = runtime[e.get("name", "?")]
            r[0] += 1
            r[1] += dur
            t = per_thread[(e.get("tid", "?"), e.get("name", "?"))]
            t[0] += 1
            t[1] += dur
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            stream = (e.get("args") or {}).get("stream", "?")
            s = per_stream[(stream, cat)]
            s[0] += 1
            s[1] += dur
            if cat == "kernel":
                k = kernels[(stream, e.get("name", "?")[:80])]
                k[0] += 1
                k[1] += dur
            span[0] = min(span[0], float(e.get("ts", 0)))
            span[1] = max(span[1], float(e.get("ts", 0)) + dur)
    print(f"{path}: {len(events)} events, GPU activity over {(span[1] - span[0]) / 1e3:.1f} ms")
    print("  GPU work per stream:")
    for (stream, cat), (n, us) in sorted(per_stream.items(), key=lambda kv: -kv[1][1]):
        print(f"    stream {stream!s:>6} {cat:11s} {n:6d} x, {us / 1e3:9.2f} ms")
    print("  CUDA runtime/driver calls (all threads), by total time:")
    for name, (n, us) in sorted(runtime.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"    {name[:50]:50s} {n:6d} x, {us / 1e3:9.2f} ms")
    print("  per thread: its CUDA calls' total time and the three longest kinds of call:")
    threads = collections.defaultdict(list)
    for (tid, name), (n, us) in per_thread.items():
        threads[tid].append((us, n, name))
    for tid, calls in sorted(threads.items(), key=lambda kv: -sum(c[0] for c in kv[1]))[:top]:
        calls.sort(reverse=True)
        top3 = ", ".join(f"{name[:28]} {n} x {us / 1e3:.1f} ms" for us, n, name in calls[:3])
        print(f"    thread {tid!s:>8} {sum(c[1] for c in calls):6d} calls "
              f"{sum(c[0] for c in calls) / 1e3:9.2f} ms: {top3}")
    print("  kernels off the busiest stream:")
    busiest = max(per_stream.items(), key=lambda kv: kv[1][1])[0][0] if per_stream else None
    others = [(k, v) for k, v in kernels.items() if k[0] != busiest]
    for (stream, name), (n, us) in sorted(others, key=lambda kv: -kv[1][1])[:top]:
        print(f"    stream {stream!s:>6} {name:80s} {n:5d} x, {us / 1e3:8.2f} ms")


for p in sys.argv[1:]:
    try:
        summarise(p)
    except Exception as e:  # say which trace failed and why, then go on with the others
        print(f"{p}: not readable: {e}")
