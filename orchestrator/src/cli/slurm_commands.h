// What `orch submit --slurm` and `orch sweep --launcher slurm` share: the Slurm options on the
// command line, and submitting a plan as one job array (optionally following it to its end).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "plan/run_spec.h"

namespace orch::cli {

struct SlurmCliOptions {
  std::string partition, time, results;
  int gpus_per_task = -1;  ///< -1: 1 when the runs use a GPU, 0 for device: cpu
  int max_parallel = 0;
  int max_requeues = 2;
  int signal_seconds = 60;
  std::vector<std::string> sbatch_args;
  bool dry_run = false, retry_failed = false;
  double poll_s = 5;
};

/// Declares --partition, --gpus-per-task, --time, --max-parallel, --results, --max-requeues,
/// --signal-seconds, --sbatch-arg, --dry-run and --poll on `cmd`.
void add_slurm_options(CLI::App& cmd, SlurmCliOptions& o);

/// Writes the submission folder for the runs of `plan` not finished yet, calls sbatch (unless
/// --dry-run) and, with `wait`, follows the job, ingests results and prints the ranking.
/// Returns the exit code.
int submit_to_slurm(const Plan& plan, const std::string& sweep_name, const GlobalOptions& g,
                    const SlurmCliOptions& o, bool wait);

}  // namespace orch::cli
