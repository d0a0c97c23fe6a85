#include "cluster/slurm_script.h"

#include <fmt/format.h>

#include <stdexcept>

#include "cluster/shell.h"

namespace orch::cluster {
namespace {

// Job names show in squeue; keep them to characters no shell or Slurm parser trips on.
std::string job_name(const std::string& sweep) {
  std::string out = "orch-";
  for (char c : sweep) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    out += keep ? c : '_';
  }
  return out;
}

}  // namespace

std::string array_range(std::size_t tasks, int max_parallel) {
  if (tasks == 0) throw std::invalid_argument("a job array needs at least one task");
  std::string range = fmt::format("0-{}", tasks - 1);
  if (max_parallel > 0) range += fmt::format("%{}", max_parallel);
  return range;
}

std::string slurm_script(const SlurmScriptInput& in) {
  const SlurmOptions& o = in.options;
  std::string s = "#!/bin/bash\n";
  s += fmt::format("# orch: sweep {}, {} runs as one Slurm job array; task i runs specs/i.json.\n",
                   in.sweep, in.result_names.size());
  s += "# Each task writes its own result document into results/; `orch ingest` (or\n"
       "# `orch sweep --launcher slurm --wait`) loads them into the database.\n";
  s += fmt::format("#SBATCH --job-name={}\n", job_name(in.sweep));
  s += fmt::format("#SBATCH --array={}\n", array_range(in.result_names.size(), o.max_parallel));
  s += "#SBATCH --ntasks=1\n";
  if (!o.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", o.partition);
  if (o.gpus_per_task > 0) s += fmt::format("#SBATCH --gpus-per-task={}\n", o.gpus_per_task);
  if (!o.time.empty()) s += fmt::format("#SBATCH --time={}\n", o.time);
  // B: the signal goes to the batch shell, which stops the run and records it as interrupted.
  s += fmt::format("#SBATCH --signal=B:TERM@{}\n", o.signal_seconds);
  s += "#SBATCH --requeue\n";
  // The log paths may contain spaces, which #SBATCH lines cannot quote: the script redirects
  // its own output below instead.
  s += "#SBATCH --output=/dev/null\n";
  for (const auto& a : o.sbatch_args) s += "#SBATCH " + a + "\n";
  s += "\nset -u\n";
  s += "ORCH=" + shell_quote(in.orch_binary) + "\n";
  s += "DIR=" + shell_quote(in.dir) + "\n";
  s += "ORCH_ARGS=(";
  for (std::size_t i = 0; i < in.plugin_paths.size(); ++i) {
    s += (i ? " " : "") + std::string("--plugin-path ") + shell_quote(in.plugin_paths[i]);
  }
  s += ")\n";
  s += fmt::format("MAX_REQUEUES={}\n", o.max_requeues);
  s += "RESULTS=(\n";
  for (const auto& r : in.result_names) s += "  " + shell_quote(r) + "\n";
  s += ")\n";
  s += R"SH(TASK=${SLURM_ARRAY_TASK_ID:?this script runs as a task of a Slurm job array}
RESTARTS=${SLURM_RESTART_COUNT:-0}
SPEC="$DIR/specs/$TASK.json"
OUT="$DIR/results/${RESULTS[$TASK]}.json"
mkdir -p "$DIR/logs" "$DIR/results"
exec >>"$DIR/logs/task-$TASK.log" 2>&1
echo "orch task $TASK: job ${SLURM_JOB_ID:-?}, restart $RESTARTS, host $(hostname), $(date -Is)"

# A result document for a run that could not write its own (stopped, crashed).
outcome() {
  "$ORCH" "${ORCH_ARGS[@]}" exec --spec "$SPEC" --out "$OUT" --write-outcome "$1" --reason "$2"
}

if [ "$RESTARTS" -gt "$MAX_REQUEUES" ]; then
  outcome interrupted "requeued $RESTARTS times (at most $MAX_REQUEUES): not run again"
  exit 0
fi

# Slurm sends SIGTERM before the time limit (--signal) and on preemption: stop the run, record
# it as interrupted (a later submission runs it again), and requeue a bounded number of times.
CHILD=
on_term() {
  trap - TERM
  if [ -n "$CHILD" ]; then
    kill -TERM "$CHILD" 2>/dev/null
    wait "$CHILD" 2>/dev/null
  fi
  outcome interrupted "stopped by Slurm (time limit or preemption) on $(hostname), restart $RESTARTS"
  if [ "$RESTARTS" -lt "$MAX_REQUEUES" ] && [ -n "${SLURM_ARRAY_JOB_ID:-}" ]; then
    scontrol requeue "${SLURM_ARRAY_JOB_ID}_${TASK}" || true
  fi
  exit 0
}
trap on_term TERM

rm -f "$OUT"
"$ORCH" "${ORCH_ARGS[@]}" exec --supervise --work-dir "$DIR/runs" --spec "$SPEC" --out "$OUT" &
CHILD=$!
wait "$CHILD"
rc=$?
CHILD=
if [ ! -s "$OUT" ]; then
  outcome failed "orch exec ended without a result (exit status $rc) on $(hostname)"
fi
exit "$rc"
)SH";
  return s;
}

}  // namespace orch::cluster
