// A sweep's submission folder, written by `orch submit` before sbatch is called:
//   specs/<i>.json       the run specification of array task i (run_spec_json)
//   index.json           which task is which run, and the sweep they belong to
//   submit.sbatch        the script handed to sbatch, kept for the record
//   results/<hash>-r<repeat>.json   written by the tasks
//   logs/task-<i>.log    each task's output
// Resume: runs already finished in the database are not written (and so not submitted again).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/slurm_script.h"
#include "plan/run_spec.h"

namespace orch::cluster {

constexpr const char* kIndexFile = "index.json";
constexpr const char* kScriptFile = "submit.sbatch";
constexpr const char* kIndexFormat = "orch.slurm-index";

/// A finished run is not submitted again: `ok`, and the final failures (failed, oom, timeout,
/// skipped) unless `retry_failed`. `interrupted`, `running` and unknown runs are submitted.
bool is_finished(const std::string& status, bool retry_failed);

/// `<hash>-r<repeat>`: the result document's name (without .json) in results/.
std::string result_name(const RunSpec& spec);

/// The runs of `runs` still to do, given the statuses recorded so far by (hash, repeat).
std::vector<const RunSpec*> pending_runs(
    const std::vector<RunSpec>& runs,
    const std::map<std::pair<std::string, int>, std::string>& done, bool retry_failed);

/// Who the sweep is, for the index (and for `orch ingest` to open the sweep).
struct SweepIdentity {
  std::string name, experiment, experiment_file, description;
};

struct Submission {
  std::string dir;                        ///< absolute
  std::string script_path;                ///< dir/submit.sbatch
  std::string script;                     ///< its text
  std::vector<std::string> result_names;  ///< per task
  std::size_t already_done = 0;           ///< runs of the plan not written (finished)
};

/// Writes specs/, index.json and submit.sbatch into `script_input.dir` for `pending` (earlier
/// specs are removed first, so the folder describes exactly this submission). With no pending
/// run nothing is written and the returned script is empty.
Submission write_submission(const SweepIdentity& sweep, const std::vector<const RunSpec*>& pending,
                            std::size_t total, SlurmScriptInput script_input);

/// The index of a submission folder (`dir/index.json`), if there is one.
std::optional<nlohmann::json> read_index(const std::string& dir);

}  // namespace orch::cluster
