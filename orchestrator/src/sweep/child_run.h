// The real Launcher: every run (and every batch-size probe) is `orch exec` in a child process
// of its own, pinned to its GPU with CUDA_VISIBLE_DEVICES. The child writes the result
// document; when it cannot (crash, kill, hang), the parent writes one from what it saw: the
// exit code or signal and the tail of the child's stderr.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sweep/scheduler.h"

namespace orch::sweep {

class WorkerPool;

struct ChildLaunchOptions {
  std::string orch_binary;                ///< the orch executable (normally /proc/self/exe)
  std::vector<std::string> plugin_paths;  ///< passed on as --plugin-path
  std::string work_dir;                   ///< spec, result and logs of each run go below it
  double grace_s = 10;                    ///< SIGTERM -> SIGKILL delay on timeout/interrupt
  std::int64_t probe_start = 64;          ///< auto-largest starts here (and plan --check's step)
  std::int64_t probe_granularity = 8;     ///< and narrows to multiples of this
  /// `auto` (fastest) probes no batch whose peak memory would pass this share of the device's
  double batch_headroom = 0.9;
};

/// The folder of one sweep's runs: `<db>.runs/<sweep>`, the name encoded by
/// sweep_file_component (one folder per name, never outside `<db>.runs/`). `orch run` uses the same
/// folders for its profiler traces, so every file of a run is in one place, whichever command ran
/// it.
std::string sweep_work_dir(const std::string& db, const std::string& sweep);

/// The folder of one run below sweep_work_dir: `<first 12 hex digits of the hash>-r<repeat>`.
std::string run_dir_name(const RunSpec& spec);

/// The profiler's Chrome trace of a run, inside its folder.
constexpr const char* kTraceFileName = "trace.json";

class ChildLauncher final : public Launcher {
 public:
  explicit ChildLauncher(ChildLaunchOptions options);
  /// Ends the idle warm workers (`isolation: worker`).
  ~ChildLauncher() override;
  std::unique_ptr<RunHandle> launch(const RunSpec& spec, const std::string& gpu) override;
  /// The run folder's result.json, when it is this run's and finished (ok, failed, oom,
  /// diverged; not spoiled by the environment).
  std::optional<nlohmann::json> unrecorded_result(const RunSpec& spec) override;
  void keep_unrecorded(const RunSpec& spec, const nlohmann::json& document) override;

  /// Batches chosen by the auto search, by configuration hash: repeats do not search again.
  std::map<std::string, std::int64_t>& chosen_batches() { return chosen_; }

 private:
  ChildLaunchOptions options_;
  std::map<std::string, std::int64_t> chosen_;
  /// Warm workers by GPU, for runs with `isolation: worker` (worker_pool.h).
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace orch::sweep
