#!/usr/bin/env python3
"""Throughput with the NVML sampler on vs off, from a database written by
`orch run bench/telemetry-overhead.yaml` (bench/telemetry-overhead.yaml explains the runs).

Prints each round's pair, the mean of each side, and the overhead in percent
(positive = the sampler slows training down). The issue's bar is |overhead| < 1%.
"""
import json
import sqlite3
import statistics
import sys


def main(path: str) -> int:
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT config_json, images_per_s FROM runs "
        "WHERE experiment = 'bench-telemetry-overhead' AND status = 'ok' ORDER BY id").fetchall()
    pairs: dict[int, dict[bool, float]] = {}
    for config_json, ips in rows:
        config = json.loads(config_json)
        pairs.setdefault(config["seed"], {})[config["telemetry"]["enabled"]] = ips
    on, off, diffs = [], [], []
    for seed in sorted(pairs):
        p = pairs[seed]
        if True in p and False in p:
            on.append(p[True])
            off.append(p[False])
            diffs.append(100.0 * (p[False] - p[True]) / p[False])
            print(f"round {seed}: on {p[True]:9.1f} img/s  off {p[False]:9.1f} img/s  "
                  f"overhead {diffs[-1]:+.2f}%")
    if not diffs:
        print("no complete on/off pair found", file=sys.stderr)
        return 1
    mean_on, mean_off = statistics.mean(on), statistics.mean(off)
    overhead = 100.0 * (mean_off - mean_on) / mean_off
    spread = statistics.stdev(diffs) if len(diffs) > 1 else float("nan")
    print(f"mean: on {mean_on:.1f} img/s, off {mean_off:.1f} img/s, "
          f"overhead {overhead:+.2f}% (per-round sd {spread:.2f} points, {len(diffs)} rounds)")
    print("PASS" if abs(overhead) < 1.0 else "FAIL", "(|overhead| < 1%)")
    return 0 if abs(overhead) < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "results.db"))
