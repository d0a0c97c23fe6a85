// Talking to Slurm through its command-line clients (sbatch, squeue, sacct; SLURM_CONF and
// PATH pick the cluster), and following a submitted array to its end while ingesting results:
// what `orch sweep --launcher slurm --wait` does after `orch submit`'s work.
#pragma once

#include <atomic>
#include <chrono>
#include <iosfwd>
#include <set>
#include <string>
#include <utility>

#include "cluster/ingest.h"

namespace orch::cluster {

/// `sbatch --parsable SCRIPT`: the job id. Throws std::runtime_error with sbatch's output.
std::string sbatch(const std::string& script_path);

/// Lines `squeue -h -j JOB` shows for the job (pending ranges and running tasks); 0 once the
/// whole array has left the queue. nullopt when squeue itself fails (controller unreachable).
std::optional<std::size_t> squeue_lines(const std::string& job_id);

/// `sacct -j JOB` states of the array's tasks, one per line, or empty when accounting is off.
std::string sacct_states(const std::string& job_id);

struct FollowResult {
  std::size_t ok = 0, not_ok = 0;  ///< runs of `keys` recorded with a final status
  std::size_t unfinished = 0;      ///< interrupted, or no result document at all
  std::size_t malformed = 0;
  bool stopped = false;  ///< `stop` was set
  int exit_code() const { return stopped || unfinished ? 3 : (not_ok || malformed ? 1 : 0); }
};

/// Counts the runs `keys` by their status in the database now.
FollowResult tally_runs(storage::Store& store, std::int64_t sweep_id,
                        const std::set<std::pair<std::string, int>>& keys);

/// Polls squeue every `interval` until job `job_id` has left the queue, ingesting `dir` each
/// time and printing `[done/total]` lines as results arrive. `keys` are the (hash, repeat) of
/// every run of the plan; `total` their number. A last ingest follows the job's end.
FollowResult follow_job(storage::Store& store, Ingester& ingester, std::int64_t sweep_id,
                        const std::string& dir, const std::string& job_id,
                        const std::set<std::pair<std::string, int>>& keys,
                        std::chrono::milliseconds interval, std::ostream& out,
                        const std::atomic<bool>& stop);

}  // namespace orch::cluster
