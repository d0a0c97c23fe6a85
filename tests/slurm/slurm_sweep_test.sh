#!/bin/bash
# `orch sweep --launcher slurm --wait` end to end on a real single-node Slurm started here
# (slurm_cluster.sh): a small CPU sweep on the test-only fault model, every run ingested, the
# ranking printed; a second invocation submits nothing; `orch ingest` twice adds nothing.
# The daemons and the jobs' processes are stopped at the end whatever happened, and none may be
# left (a slurmstepd whose slurmd was stopped first used to stay, forever); the logs are printed
# on failure.
# Usage: slurm_sweep_test.sh ORCH_BINARY FAULT_PLUGIN_DIR
set -u
ORCH=$1
FAULT_PLUGINS=$2
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/slurm_cluster.sh"

T=$(mktemp -d /tmp/orch-slurm-test.XXXXXX)
chmod 755 "$T"
FAILED=0
finish() {
  # Nothing this test started may outlive it: no daemon, no slurmstepd, no job process. Ending
  # the jobs, then the daemons, must stop them all; one that slurm_down has to kill afterwards
  # is a failure too (it would have stayed), and so is one still alive after that.
  local down left
  down=$(slurm_down)
  left=$(slurm_leftovers)
  if [ -n "$down" ] || [ -n "$left" ]; then
    echo "FAIL: processes of the test's Slurm outlived the daemons:" | tee -a "$T/checks.log"
    printf '%s\n' "$down" "${left:+still alive after that:}" "$left" | grep -v '^$' | tee -a "$T/checks.log"
    FAILED=1
  else
    echo "ok: no daemon, slurmstepd or job process of the test's Slurm is left"
  fi
  if [ "$FAILED" -ne 0 ]; then
    # The failed checks first: a CI log cut in the middle keeps a test's first lines and the
    # run's last ones, so they are said at both ends; the commands' output comes between.
    grep -h "^FAIL: " "$T/checks.log" 2>/dev/null
    echo "===== what the commands printed"
    cat "$T/outputs.log" 2>/dev/null
    slurm_logs
    for f in "$T"/work\ dir/*.slurm/*/logs/*.log; do
      [ -f "$f" ] && { echo "===== $f"; tail -n 30 "$f"; }
    done
    # The checks that failed again, last, where a truncated CI log still shows them.
    grep -h "^FAIL: " "$T/checks.log" 2>/dev/null
    echo "FAILED (files kept in $T)"
  else
    rm -rf "$T"
    echo "PASSED"
  fi
  [ "$FAILED" -eq 0 ] || exit 1
}
trap finish EXIT
# The commands' output goes to a file, printed on failure after the failed checks.
say() { printf '%s\n' "$*" >>"$T/outputs.log"; }
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what" | tee -a "$T/checks.log"; FAILED=1; fi
}

if ! slurm_up "$T/slurm"; then
  FAILED=1
  exit 1
fi

W="$T/work dir"  # a space: every path orch hands to Slurm must survive it
mkdir -p "$W"
cat >"$W/exp.yaml" <<'YAML'
name: slurmtest
description: four CPU runs on the fault model, two of which throw
base:
  model: {plugin: fault}
  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}
  batch_size: 4
  device: cpu
  steps: {warmup: 1, measure: 3}
  telemetry: {enabled: false}
matrix:
  model.mode: [none, throw]
  model.sleep_ms: [0, 20]
YAML
DB="$W/results.db"
orch() { "$ORCH" --db "$DB" --plugin-path "$FAULT_PLUGINS" "$@"; }

out=$(orch sweep "$W/exp.yaml" --launcher slurm --wait --poll 1 --time 00:05:00 --max-parallel 2 2>&1)
rc=$?
say "$out"
check "the sweep exits 1 (two runs failed on purpose), got $rc" [ "$rc" -eq 1 ]
check "four runs submitted" grep -q "0 already finished, 4 to submit" <<<"$out"
check "a job array was submitted" grep -Eq "submitted job array [0-9]+ \(4 tasks\)" <<<"$out"
check "progress reached 4/4" grep -q "^\[4/4\] ok 2, not ok 2" <<<"$out"
check "the ranking is printed" grep -Eq "^ +1 +mode=none/sleep_ms=(0|20) " <<<"$out"
check "the script asked for at most 2 tasks at once" \
  grep -q "^#SBATCH --array=0-3%2$" "$W/results.db.slurm/slurmtest/submit.sbatch"
counts=$(python3 - "$DB" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(" ".join(f"{s}={n}" for s, n in db.execute(
    "SELECT status, COUNT(*) FROM runs GROUP BY status ORDER BY status")))
PY
)
say "database: $counts"
check "all four runs are in the database" [ "$counts" = "failed=2 ok=2" ]

out=$(orch sweep "$W/exp.yaml" --launcher slurm --wait --poll 1 2>&1)
say "$out"
check "a second invocation submits nothing" grep -q "4 already finished, 0 to submit" <<<"$out"
check "nothing was sent to sbatch" bash -c "! grep -q 'submitted job array' <<<\"\$0\"" "$out"
out=$(orch submit "$W/exp.yaml" --slurm 2>&1)
check "orch submit submits nothing either" grep -q "nothing to submit" <<<"$out"

out=$(orch ingest "$W/results.db.slurm/slurmtest" 2>&1)
say "$out"
check "ingest again adds nothing" grep -q ": 0 recorded, 4 already recorded, 0 malformed" <<<"$out"

# Inside a task the run goes through `orch exec --supervise`, the local sweep's launcher:
# batch_size: auto-largest (the largest batch that fits) is searched there (the fault model
# holds at most 100 samples), and a crash (here in the first probe) still leaves a document
# naming the signal.
cat >"$W/auto.yaml" <<'YAML'
name: slurmauto
base:
  model: {plugin: fault, max_batch: 100}
  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}
  batch_size: auto-largest
  device: cpu
  steps: {warmup: 1, measure: 3}
  telemetry: {enabled: false}
matrix:
  model.mode: [none, segfault]
YAML
out=$(orch sweep "$W/auto.yaml" --launcher slurm --wait --poll 1 --time 00:05:00 2>&1)
say "$out"
auto=$(python3 - "$DB" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for mode, status, batch, auto, err in db.execute(
        """SELECT json_extract(r.config_json, '$.model.params.mode'), r.status, r.batch_size,
                  r.batch_auto, coalesce(r.error, '') FROM runs r JOIN sweeps s ON s.id = r.sweep_id
           WHERE s.name = 'slurmauto' ORDER BY 1"""):
    print(mode, status, batch, auto, err[-70:])
PY
)
say "$auto"
check "batch_size: auto-largest was searched inside the task (96 of 100)" grep -Eq "^none ok 96 1" <<<"$auto"
check "a crash inside the task is recorded with its signal" grep -Eq "^segfault failed .*SIGSEGV" <<<"$auto"

# A closed terminal (SIGHUP) while following the job stops the following cleanly, as SIGTERM
# does: exit 3, the job left running and named for `orch ingest`. Without a handler for it,
# SIGHUP would kill orch with no message.
cat >"$W/slow.yaml" <<'YAML'
name: slurmslow
base:
  model: {plugin: fault, sleep_ms: 2000}
  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}
  batch_size: 4
  device: cpu
  steps: {warmup: 1, measure: 20}
  telemetry: {enabled: false}
YAML
# The binary itself in the background (the `orch` function would put a subshell there).
"$ORCH" --db "$DB" --plugin-path "$FAULT_PLUGINS" sweep "$W/slow.yaml" --launcher slurm --wait \
  --poll 1 --time 00:05:00 >"$T/slow.out" 2>&1 &
pid=$!
# A loaded machine can take many seconds to plan and submit: wait for the submission itself
# (up to 2 minutes), then for orch to be following the job, before the terminal closes.
for _ in $(seq 1 240); do
  grep -q "submitted job array" "$T/slow.out" && break
  sleep 0.5
done
check "the slow sweep was submitted before SIGHUP" grep -q "submitted job array" "$T/slow.out"
sleep 2
kill -HUP "$pid"
wait "$pid"
rc=$?
say "$(cat "$T/slow.out")"
check "SIGHUP while following exits 3, got $rc" [ "$rc" -eq 3 ]
check "the job is left running, named" grep -q "stopped following job .*it keeps running" "$T/slow.out"
scancel --name=orch-slurmslow >/dev/null 2>&1 || scancel -u "$(id -un)" >/dev/null 2>&1 || true

[ "$FAILED" -eq 0 ]
