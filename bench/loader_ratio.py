#!/usr/bin/env python3
"""Issue #5's CPU-loader target from bench/run-gpu-loaders.sh's logs: orch's `imagefolder`
against torchvision's DataLoader at each worker count, as the ratio of their mean img/s over the
runs that took turns (and the lowest ratio of a run to its torchvision turn), target >= 2x.

    python3 bench/loader_ratio.py LOADERS_ONLY.txt LOADERS_TORCHVISION.jsonl

LOADERS_ONLY.txt is `orch dataset bench` output: a line "imagefolder: ... N img/s ..." and,
among the counters after it, "data.workers = W". Reads only those files; runs nothing.
"""
import json
import re
import statistics
import sys
from collections import defaultdict


def orch_runs(path):
    """{workers: [img/s, ...]} for the imagefolder rows, in the order they ran."""
    runs, pending = defaultdict(list), None
    for line in open(path):
        m = re.match(r"imagefolder: .* ([0-9.]+) img/s", line)
        if m:
            pending = float(m.group(1))
            continue
        m = re.match(r"\s*data\.workers = (\d+)", line)
        if m and pending is not None:
            runs[int(m.group(1))].append(pending)
            pending = None
    return runs


def torchvision_runs(path):
    runs = defaultdict(list)
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            row = json.loads(line)
            runs[int(row["workers"])].append(float(row["images_per_s"]))
    return runs


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    orch, tv = orch_runs(sys.argv[1]), torchvision_runs(sys.argv[2])
    print(f"{'workers':>7}  {'imagefolder img/s (runs)':<34}{'torchvision img/s (runs)':<34}"
          f"{'ratio of means':>15}{'lowest pair':>13}  target 2x")
    for w in sorted(set(orch) | set(tv)):
        o, t = orch.get(w, []), tv.get(w, [])
        fmt = lambda xs: (f"{statistics.mean(xs):,.0f} ({', '.join(f'{x:,.0f}' for x in xs)})"
                          if xs else "-")
        if o and t:
            ratio = statistics.mean(o) / statistics.mean(t)
            lowest = min(a / b for a, b in zip(o, t))
            verdict = "met" if ratio >= 2 else "NOT met"
            print(f"{w:>7}  {fmt(o):<34}{fmt(t):<34}{ratio:>14.2f}x{lowest:>12.2f}x  {verdict}")
        else:
            print(f"{w:>7}  {fmt(o):<34}{fmt(t):<34}{'-':>15}{'-':>13}")


if __name__ == "__main__":
    main()
