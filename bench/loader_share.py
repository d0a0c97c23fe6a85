#!/usr/bin/env python3
"""Issue #5's table from an orch database: each loader's end-to-end img/s as a share of
synthetic data's, for the same model and stream strategy, and where its time per batch went.

    python3 bench/loader_share.py RESULTS.db [EXPERIMENT]

For every (model, stream) group that has a synthetic row: one line per data configuration with
the mean img/s over repeats (± the standard deviation when there are several), the share of
the synthetic mean, the loop's mean wait for a batch per measured step (data_wait_ms_mean),
and the loader's own counters per batch made (warm-up included): time inside nvJPEG's calls
(of it the batched call and the per-image header checks, where recorded), waiting for the GPU
at the end, and CPU decode time (cpu_share) summed over threads. Reads only what orch stores;
runs nothing.
"""
import json
import sqlite3
import statistics
import sys
from collections import defaultdict


def data_label(cfg, varying):
    """The loader and the parameters that tell this sweep's rows of it apart."""
    d = cfg["data"]
    if d["plugin"] == "synthetic":
        return "synthetic"
    keep = [f"{k}={d['params'][k]}" for k in sorted(varying.get(d["plugin"], ())) if k in d["params"]]
    return d["plugin"] + (" " + " ".join(keep) if keep else "")


def varying_params(configs):
    """Per loader plugin, the parameters whose value is not the same in every run."""
    seen = defaultdict(lambda: defaultdict(set))
    for cfg in configs:
        d = cfg["data"]
        for k, v in d["params"].items():
            seen[d["plugin"]][k].add(json.dumps(v))
    return {plugin: {k for k, vs in params.items() if len(vs) > 1} for plugin, params in seen.items()}


def model_label(cfg):
    m = cfg["model"]
    return f"{m['plugin']}{m['params'].get('depth', '')}" + (
        " fused_bn" if m["params"].get("fused_bn") else "")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    db = sqlite3.connect(sys.argv[1])
    where, args = "status = 'ok'", []
    if len(sys.argv) > 2:
        where += " AND experiment = ?"
        args.append(sys.argv[2])
    rows = [(json.loads(c), json.loads(d or "{}") | {"data_wait_ms": w}, ips)
            for c, d, ips, w in db.execute(
                "SELECT config_json, document_json, images_per_s, (SELECT value FROM run_metrics "
                "WHERE run_id = runs.id AND name = 'data_wait_ms_mean') FROM runs WHERE " + where +
                " ORDER BY id", args)]
    varying = varying_params(cfg for cfg, _, _ in rows)
    groups = defaultdict(lambda: defaultdict(list))
    for cfg, doc, ips in rows:
        key = (model_label(cfg), cfg["stream"]["plugin"], str(cfg.get("cuda_connections", "driver")))
        groups[key][data_label(cfg, varying)].append((ips, doc, cfg))
    failed = db.execute("SELECT name, status, error FROM runs WHERE status != 'ok'" +
                        (" AND experiment = ?" if len(sys.argv) > 2 else ""), args).fetchall()

    width = max((len(label) for g in groups.values() for label in g), default=4) + 2
    head = (f"{'data':<{width}}{'img/s':>18}{'share':>8}{'wait ms/step':>14}"
            f"{'nvjpeg ms/b':>13}{'(batched':>10}{'check)':>8}{'gpu wait ms/b':>15}{'cpu ms/b':>10}")
    for (model, stream, conn), rows in sorted(groups.items()):
        print(f"\n{model}, stream {stream}, cuda_connections {conn}")
        print(head)
        base = rows.get("synthetic")
        base_mean = statistics.mean(r[0] for r in base) if base else None
        for label, runs in sorted(rows.items(), key=lambda kv: kv[0] != "synthetic"):
            ips = [r[0] for r in runs]
            mean = statistics.mean(ips)
            sd = f" ± {statistics.stdev(ips):.1f}" if len(ips) > 1 else ""
            share = f"{mean / base_mean:.1%}" if base_mean else "n/a"
            waits, nv, bt, ck, gw, cpu = [], [], [], [], [], []
            for _, doc, cfg in runs:
                c = doc.get("counters", {})
                batches = c.get("data.images", 0) / cfg["batch_size"]
                if doc.get("data_wait_ms") is not None:
                    waits.append(doc["data_wait_ms"])
                if batches:
                    nv.append(c.get("data.decode_nvjpeg_ms", 0) / batches)
                    if "data.decode_nvjpeg_batched_ms" in c:
                        bt.append(c["data.decode_nvjpeg_batched_ms"] / batches)
                        ck.append(c["data.decode_nvjpeg_check_ms"] / batches)
                    gw.append(c.get("data.decode_gpu_wait_ms", 0) / batches)
                    cpu.append(c.get("data.cpu_decode_ms", 0) / batches)
            f = lambda xs: f"{statistics.mean(xs):.1f}" if xs else "-"
            print(f"{label:<{width}}{mean:>11.1f}{sd:<7}{share:>8}{f(waits):>14}{f(nv):>13}"
                  f"{f(bt):>10}{f(ck):>8}{f(gw):>15}{f(cpu):>10}")
    for name, status, error in failed:
        print(f"\nnot ok: {name}: {status}: {(error or '')[:300]}")


if __name__ == "__main__":
    main()
