#!/bin/bash
# `orch export --to mlflow` against a real MLflow tracking server started here (`mlflow server`
# from the venv scripts/setup.sh makes, a SQLite backend store in a temporary folder, a free
# localhost port): a small CPU sweep on the test-only fault model (two runs ok, two failed, host
# telemetry on; GPU samples and an infinite loss written into the database afterwards, since a
# CPU run has neither), pushed, read back with MLflow's own client (read_back.py), pushed again
# (nothing created), a half-pushed run pushed again, and the failures: a server that is not
# there (exit 4), one that answers an error (exit 1), a URI that is not http (exit 2).
# Skipped (exit 77) when the venv has no MLflow. The server is stopped whatever happened.
# Usage: mlflow_export_test.sh ORCH_BINARY FAULT_PLUGIN_DIR PYTHON
set -u
ORCH=$1
FAULT_PLUGINS=$2
PY=$3
HERE=$(cd "$(dirname "$0")" && pwd)

if ! [ -x "$PY" ] || ! "$PY" -c "import mlflow" 2>/dev/null; then
  echo "skipped: no MLflow in $PY (scripts/setup.sh installs it into its own venv)"
  exit 77
fi

T=$(mktemp -d /tmp/orch-mlflow-test.XXXXXX)
FAILED=0
SERVER=
finish() {
  if [ -n "$SERVER" ]; then
    kill "$SERVER" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SERVER" 2>/dev/null
  fi
  if [ "$FAILED" -ne 0 ]; then
    echo "===== mlflow server log (last 40 lines)"
    tail -n 40 "$T/server.log" 2>/dev/null
    grep -h "^FAIL: " "$T/checks.log" 2>/dev/null
    echo "FAILED (files kept in $T)"
  else
    rm -rf "$T"
    echo "PASSED"
  fi
}
trap finish EXIT
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what" | tee -a "$T/checks.log"; FAILED=1; fi
}
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The server starts first: it takes seconds (longer on a loaded machine) while the sweep runs.
PORT=$(free_port)
URI="http://127.0.0.1:$PORT"
# setsid: the server's workers are in a group of their own, ended with it.
setsid "$PY" -m mlflow server --host 127.0.0.1 --port "$PORT" --workers 1 \
  --backend-store-uri "sqlite:///$T/mlflow.db" --default-artifact-root "$T/artifacts" \
  >"$T/server.log" 2>&1 &
SERVER=$!
started=$(date +%s)

cat >"$T/exp.yaml" <<'YAML'
name: mlflowtest
description: four CPU runs on the fault model, two of which throw
base:
  model: {plugin: fault, sleep_ms: 40}
  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}
  batch_size: 4
  device: cpu
  steps: {warmup: 1, measure: 6}
  telemetry: {enabled: true, interval_ms: 20}
  repeat: 2
matrix:
  model.mode: [none, throw]
YAML
DB="$T/results.db"
orch() { "$ORCH" --db "$DB" --plugin-path "$FAULT_PLUGINS" "$@"; }
out=$(orch sweep "$T/exp.yaml" 2>&1)
rc=$?
check "the sweep exits 1 (two runs fail on purpose), got $rc" [ "$rc" -eq 1 ]
if [ "$rc" -ne 1 ]; then
  echo "$out"
  exit 1
fi
# What a CPU run cannot record: GPU samples (NVML) and, from a diverging run, an infinite loss.
"$PY" - "$DB" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
run = db.execute("SELECT MIN(id) FROM runs WHERE status = 'ok'").fetchone()[0]
db.executemany("INSERT INTO telemetry_samples (run_id, seq, t_s, gpu_util_pct, power_w, "
               "memory_used_bytes) VALUES (?, ?, ?, ?, ?, ?)",
               [(run, i, 0.1 * i, 80 + i, 250.5 + i, 10200000000) for i in range(3)])
db.execute("UPDATE run_steps SET loss = 9e999 WHERE run_id = ? AND step = 1", (run,))
db.commit()
PY

until curl -sf "$URI/health" >/dev/null 2>&1; do
  if ! kill -0 "$SERVER" 2>/dev/null; then
    check "the mlflow server started" false
    exit 1
  fi
  if [ $(($(date +%s) - started)) -gt 240 ]; then
    check "the mlflow server answered within 240 s" false
    exit 1
  fi
  sleep 0.5
done
echo "mlflow server up after $(($(date +%s) - started)) s on port $PORT"

out=$(orch export --to mlflow --tracking-uri "$URI" --experiment "orch test" 2>&1)
rc=$?
echo "$out"
check "the push exits 0, got $rc" [ "$rc" -eq 0 ]
check "four runs created" grep -q "4 created, 0 already there" <<<"$out"
check "the experiment was created" grep -q "MLflow experiment 'orch test' (id [0-9]*, created)" <<<"$out"
"$PY" "$HERE/read_back.py" "$URI" "orch test" "$DB" mlflowtest >"$T/read_back.log" 2>&1
rc=$?
cat "$T/read_back.log"
check "MLflow's client reads back what the database holds" [ "$rc" -eq 0 ]

out=$(orch export --to mlflow --tracking-uri "$URI/" --experiment "orch test" 2>&1)
rc=$?
echo "$out"
check "a second push exits 0 and creates nothing" grep -q "0 created, 4 already there" <<<"$out"

# A push that stopped half-way leaves a run without orch.push = complete: pushed again, once.
"$PY" - "$URI" <<'PY'
import sys
from mlflow.tracking import MlflowClient
c = MlflowClient(tracking_uri=sys.argv[1])
e = c.get_experiment_by_name("orch test")
run = c.search_runs([e.experiment_id], order_by=["attributes.start_time ASC"])[0]
c.delete_tag(run.info.run_id, "orch.push")
PY
out=$(MLFLOW_TRACKING_URI="$URI" orch export --to mlflow --experiment "orch test" 2>&1)
rc=$?
echo "$out"
check "the half-pushed run is pushed again (MLFLOW_TRACKING_URI)" \
  grep -q "0 created, 3 already there, 1 pushed again" <<<"$out"
"$PY" "$HERE/read_back.py" "$URI" "orch test" "$DB" mlflowtest >"$T/read_back2.log" 2>&1
rc=$?
grep -E "^(FAIL|mlflow:)" "$T/read_back2.log"
check "still one MLflow run per orch run, each whole" [ "$rc" -eq 0 ]

# The default experiment is the sweep's.
out=$(orch export --to mlflow --tracking-uri "$URI" 2>&1)
check "without --experiment, the experiment is the sweep's" \
  grep -q "experiment 'mlflowtest' (id [0-9]*, created) at $URI: 4 created" <<<"$out"

# Failures, each named with the URI.
DEAD_PORT=$(free_port)
out=$(orch export --to mlflow --tracking-uri "http://127.0.0.1:$DEAD_PORT" 2>&1)
rc=$?
echo "$out"
check "no server there: exit 4, got $rc" [ "$rc" -eq 4 ]
check "no server there: the message names the URI" \
  grep -q "cannot reach the MLflow tracking server at http://127.0.0.1:$DEAD_PORT" <<<"$out"
check "no server there: it says nothing was pushed" grep -q "0 of 4 runs of sweep 'mlflowtest' were pushed" <<<"$out"
out=$(orch export --to mlflow --tracking-uri "$URI/not-mlflow" 2>&1)
rc=$?
echo "$out"
check "an HTTP error: exit 1, got $rc" [ "$rc" -eq 1 ]
check "an HTTP error: the status is named" grep -q "at $URI/not-mlflow answered HTTP 404 to GET" <<<"$out"
out=$(orch export --to mlflow --tracking-uri "file:///tmp/mlruns" 2>&1)
rc=$?
echo "$out"
check "a file: URI is bad input: exit 2, got $rc" [ "$rc" -eq 2 ]
check "a file: URI: the message says what is taken" grep -q "is not an http:// or https:// URI" <<<"$out"
out=$(MLFLOW_TRACKING_URI= orch export --to mlflow 2>&1)
rc=$?
check "no URI at all: exit 2, got $rc" [ "$rc" -eq 2 ]
out=$(orch export --to mlflow --tracking-uri "$URI" --format csv 2>&1)
rc=$?
check "--format beside --to: exit 2, got $rc" [ "$rc" -eq 2 ]
exit "$FAILED"
