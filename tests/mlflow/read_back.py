"""Reads an `orch export --to mlflow` push back with MLflow's own client and checks it against
the orch database it came from. Usage: read_back.py TRACKING_URI EXPERIMENT DB SWEEP
Prints one line per check ("ok: ..." or "FAIL: ...") and exits 1 when any failed."""
import json
import math
import sqlite3
import sys

from mlflow.tracking import MlflowClient

uri, experiment, db_path, sweep = sys.argv[1:5]
failed = []


def check(what, condition):
    print(("ok: " if condition else "FAIL: ") + what)
    if not condition:
        failed.append(what)


def flatten(value, prefix, out):
    """orch's flatten_json: a plugin choice's params are lifted, arrays are JSON text."""
    if isinstance(value, dict):
        choice = "plugin" in value and isinstance(value.get("params"), dict)
        for k, v in value.items():
            if choice and k == "params":
                flatten(v, prefix, out)
            else:
                flatten(v, f"{prefix}.{k}" if prefix else k, out)
    elif isinstance(value, list):
        out[prefix] = json.dumps(value, separators=(",", ":"))
    else:
        out[prefix] = value


db = sqlite3.connect(db_path)
client = MlflowClient(tracking_uri=uri)
exp = client.get_experiment_by_name(experiment)
check(f"experiment {experiment} exists", exp is not None)
if exp is None:
    sys.exit(1)
runs = client.search_runs([exp.experiment_id], max_results=1000)
rows = db.execute(
    """SELECT r.id, r.name, r.config_hash, r.repeat, r.status, r.config_json, r.images_per_s,
              r.diagnosis, r.environment_json
       FROM runs r JOIN sweeps s ON s.id = r.sweep_id WHERE s.name = ? ORDER BY r.id""",
    (sweep,),
).fetchall()
print(f"mlflow: {len(runs)} runs, database: {len(rows)} runs")
check("one MLflow run per orch run", len(runs) == len(rows))
by_db_id = {r.data.tags.get("orch.run_id"): r for r in runs}
check("each orch run once (orch.run_id)", len(by_db_id) == len(runs))

for run_id, name, config_hash, repeat, status, config_json, ips, diagnosis, env_json in rows:
    r = by_db_id.get(str(run_id))
    check(f"run {run_id} ({name} #{repeat}) is in MLflow", r is not None)
    if r is None:
        continue
    tags, params, metrics = r.data.tags, r.data.params, r.data.metrics
    label = f"run {run_id}"
    check(f"{label}: tags sweep, hash, repeat, status",
          tags.get("orch.sweep") == sweep and tags.get("orch.config_hash") == config_hash
          and tags.get("orch.repeat") == str(repeat) and tags.get("orch.status") == status)
    check(f"{label}: pushed whole (orch.push = complete)", tags.get("orch.push") == "complete")
    expected_status = "FINISHED" if status == "ok" else "FAILED"
    check(f"{label}: MLflow status {r.info.status} is {expected_status}",
          r.info.status == expected_status)
    check(f"{label}: run name", r.info.run_name == (name if repeat == 0 else f"{name}#{repeat}"))
    if diagnosis:
        check(f"{label}: diagnosis tag", tags.get("orch.diagnosis") == diagnosis)
    env = json.loads(env_json or "{}")
    if "torch_version" in env:
        check(f"{label}: environment tag env.torch_version",
              tags.get("env.torch_version") == str(env["torch_version"]))
    if "hostname" in env:
        check(f"{label}: environment tag env.hostname", tags.get("env.hostname") == env["hostname"])

    config = {}
    flatten(json.loads(config_json), "", config)
    check(f"{label}: one param per configuration key ({len(params)} of {len(config)})",
          set(params) == set(config))
    wrong = [k for k, v in config.items()
             if k in params and params[k] != (v if isinstance(v, str) else json.dumps(v))]
    check(f"{label}: param values equal the configuration (wrong: {wrong[:5]})", not wrong)
    check(f"{label}: params model.mode, device", params.get("device") == "cpu"
          and params.get("model.plugin") == "fault")

    db_metrics = dict(db.execute("SELECT name, value FROM run_metrics WHERE run_id = ?",
                                 (run_id,)).fetchall())
    missing = [k for k in db_metrics if k not in metrics]
    check(f"{label}: every run_metrics value is a metric (missing: {missing[:5]})", not missing)
    off = [k for k, v in db_metrics.items()
           if k in metrics and v is not None and not math.isclose(metrics[k], v, rel_tol=1e-12)]
    check(f"{label}: metric values equal the database's (off: {off[:5]})", not off)
    if status == "ok":
        check(f"{label}: throughput images_per_s", math.isclose(metrics.get("images_per_s", -1), ips))

    steps = db.execute("SELECT step, step_ms, loss FROM run_steps WHERE run_id = ? ORDER BY step",
                       (run_id,)).fetchall()
    hist = sorted(client.get_metric_history(r.info.run_id, "step/step_ms"), key=lambda m: m.step)
    check(f"{label}: step/step_ms has {len(steps)} points ({len(hist)})", len(hist) == len(steps))
    check(f"{label}: step/step_ms values and steps",
          [(m.step, m.value) for m in hist] == [(s, v) for s, v, _ in steps])
    losses = {m.step: m.value for m in client.get_metric_history(r.info.run_id, "step/loss")}
    for s, _, loss in steps:
        if loss is not None and math.isinf(loss):
            # MLflow's SQL store keeps an infinity as the largest double.
            check(f"{label}: an infinite loss at step {s} arrived as {losses.get(s)}",
                  losses.get(s) is not None and abs(losses[s]) > 1e308)

    for table, prefix, column in (("host_samples", "host", "cpu_util_pct"),
                                  ("host_samples", "host", "load1"),
                                  ("telemetry_samples", "gpu", "power_w")):
        samples = db.execute(f"SELECT seq, {column} FROM {table} WHERE run_id = ? AND {column} "
                             "IS NOT NULL ORDER BY seq", (run_id,)).fetchall()
        hist = sorted(client.get_metric_history(r.info.run_id, f"{prefix}/{column}"),
                      key=lambda m: m.step)
        check(f"{label}: {prefix}/{column} is the time series of {len(samples)} samples "
              f"({len(hist)})", [(m.step, m.value) for m in hist] == samples)
        if len(hist) > 1:
            check(f"{label}: {prefix}/{column} stamped with the samples' times",
                  hist[-1].timestamp >= hist[0].timestamp)

series = sum(1 for r in runs if "host/load1" in r.data.metrics)
print(f"runs with a host time series: {series}")
gpu = sum(1 for r in runs if "gpu/power_w" in r.data.metrics)
check(f"the GPU series was pushed where there were samples ({gpu} run(s))", gpu >= 1)
sys.exit(1 if failed else 0)
