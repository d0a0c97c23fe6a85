// The sbatch script of a sweep submitted to Slurm: one job array, task i runs the run in
// specs/i.json with `orch exec` and writes its result document into the shared results folder
// (never SQLite on a shared filesystem). A pure function of its input, so it is unit-tested
// without Slurm.
#pragma once

#include <string>
#include <vector>

namespace orch::cluster {

/// What the user chose on the command line (`orch submit --slurm ...`).
struct SlurmOptions {
  std::string partition;                 ///< --partition; empty: the cluster's default
  int gpus_per_task = 1;                 ///< --gpus-per-task; 0 writes no GPU request
  std::string time;                      ///< --time, e.g. 00:30:00; empty: the partition's default
  int max_parallel = 0;                  ///< --max-parallel K: at most K tasks at once; 0: no limit
  int max_requeues = 2;                  ///< a task is requeued at most this many times
  int signal_seconds = 60;               ///< SIGTERM to the batch shell this long before the limit
  std::vector<std::string> sbatch_args;  ///< further `#SBATCH` options (--account=..., --qos=...)
};

struct SlurmScriptInput {
  std::string sweep;                      ///< the sweep's name (job name, comments)
  std::string orch_binary;                ///< absolute path, reachable from the nodes
  std::vector<std::string> plugin_paths;  ///< passed to every `orch exec` as --plugin-path
  std::string dir;                        ///< the submission folder: specs/, results/, logs/
  std::vector<std::string> result_names;  ///< task i writes results/<result_names[i]>.json
  SlurmOptions options;
};

/// `0-N` or `0-N%K` for `tasks` tasks (N = tasks - 1). Throws std::invalid_argument for 0 tasks.
std::string array_range(std::size_t tasks, int max_parallel);

/// The whole script, starting with `#!/bin/bash`.
std::string slurm_script(const SlurmScriptInput& in);

}  // namespace orch::cluster
