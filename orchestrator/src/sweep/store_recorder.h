// The scheduler's Recorder over the SQLite store: one sweep of one database. A database the
// surroundings keep from being written (full, locked past the busy timeout, failing I/O) is
// reported as an EnvironmentFault, which stops the sweep.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "storage/store.h"
#include "sweep/scheduler.h"

namespace orch::sweep {

class StoreRecorder final : public Recorder {
 public:
  StoreRecorder(storage::Store& store, std::int64_t sweep_id);

  std::map<std::pair<std::string, int>, PriorRun> prior_runs() override;
  std::optional<double> measured_duration_s(const RunSpec& spec) override;
  std::int64_t begin(const RunSpec& spec, const std::string& gpu) override;
  void heartbeat(std::int64_t id) override;
  void finish(std::int64_t id, const nlohmann::json& document) override;
  void mark_stale(const RunSpec& spec, const std::string& reason) override;
  void device_checked(const std::string& gpu, const DeviceVerdict& verdict) override;
  void mark_pruned(const RunSpec& spec) override;

 private:
  storage::Store& store_;
  std::int64_t sweep_id_;
  std::string host_;
  // Durations of finished runs by configuration hash: from earlier invocations and this one.
  std::map<std::string, std::vector<double>> durations_;
  std::map<std::pair<std::string, int>, std::int64_t> ids_;
};

}  // namespace orch::sweep
