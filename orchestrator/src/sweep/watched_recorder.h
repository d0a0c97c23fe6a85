// A database deleted or replaced while a sweep runs (`rm results.db`, a sync tool writing a
// copy over it): SQLite keeps writing into the unlinked file it has open, and the sweep would
// report success into a file nobody can read again. This Recorder wraps another one and checks,
// before every write, that the path still names the file the sweep opened (same device and
// inode); when it does not, it throws and the sweep stops with a clear message.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>

#include "sweep/environment_fault.h"
#include "sweep/scheduler.h"

namespace orch::sweep {

/// The error of a vanished or replaced database: an environment fault, not a run's.
class DatabaseGone : public EnvironmentFault {
 public:
  explicit DatabaseGone(const std::string& what) : EnvironmentFault(what, /*database=*/true) {}
};

class WatchedRecorder final : public Recorder {
 public:
  /// Remembers the identity of the file at `db_path` now (it must exist).
  WatchedRecorder(Recorder& inner, std::string db_path);

  std::map<std::pair<std::string, int>, PriorRun> prior_runs() override;
  std::optional<double> measured_duration_s(const RunSpec& spec) override;
  std::int64_t begin(const RunSpec& spec, const std::string& gpu) override;
  void heartbeat(std::int64_t id) override;
  void finish(std::int64_t id, const nlohmann::json& document) override;
  void mark_stale(const RunSpec& spec, const std::string& reason) override;
  void device_checked(const std::string& gpu, const DeviceVerdict& verdict) override;
  void mark_pruned(const RunSpec& spec) override;

  /// Throws DatabaseGone when the path no longer names the file the sweep opened.
  void check() const;

 private:
  Recorder& inner_;
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace orch::sweep
