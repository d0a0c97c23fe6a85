#!/usr/bin/env python3
"""Prints the stored profiles of a results database (run_profile, run_profile_ops) and checks
that each trace file parses as JSON: python3 bench/read_profile.py DB"""
import json
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
for (run_id, name, ips, steps, step_ms, kps, busy, launches, trace, err) in db.execute(
        "SELECT r.id, r.name, r.images_per_s, p.steps, p.step_ms, p.kernels_per_step, "
        "p.gpu_busy_share, p.cuda_launches_per_step, p.trace_path, p.error "
        "FROM runs r JOIN run_profile p ON p.run_id = r.id ORDER BY r.id"):
    print(f"{name}: {ips:.1f} img/s measured; profiled {steps} steps at {step_ms:.2f} ms, "
          f"{kps:.0f} kernels/step, {launches:.0f} launches/step, GPU busy {busy:.1%}, error {err}")
    try:
        with open(trace) as f:
            events = json.load(f).get("traceEvents", [])
        names = {e.get("name") for e in events}
        print(f"  trace {trace}: {len(events)} events; has forward: {'forward' in names}")
    except Exception as e:  # the check is the point: say what failed
        print(f"  trace {trace}: not readable: {e}")
    for kind, pos, op, calls, total, share in db.execute(
            "SELECT kind, position, name, calls, total_ms, share FROM run_profile_ops "
            "WHERE run_id = ? AND position <= 5 ORDER BY kind DESC, position", (run_id,)):
        print(f"  {kind:7s} {pos}. {op[:90]:90s} calls {calls:5d} {total:9.2f} ms {share:6.1%}")
