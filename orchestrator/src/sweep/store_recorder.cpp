#include "sweep/store_recorder.h"

#include <unistd.h>

#include <numeric>

#include "plan/run_spec_json.h"
#include "result/result_document.h"
#include "sweep/environment_fault.h"

namespace orch::sweep {

namespace {

// Runs one store call; an environment error becomes an EnvironmentFault naming the database.
template <typename F>
auto guarded(storage::Store& store, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const storage::SqliteError& e) {
    if (!e.environment()) throw;
    throw EnvironmentFault(storage::database_fault_text(e, store.path()), /*database=*/true);
  }
}

}  // namespace

StoreRecorder::StoreRecorder(storage::Store& store, std::int64_t sweep_id)
    : store_(store), sweep_id_(sweep_id) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  host_ = host;
}

std::map<std::pair<std::string, int>, PriorRun> StoreRecorder::prior_runs() {
  std::map<std::pair<std::string, int>, PriorRun> out;
  for (const auto& [key, st] : guarded(store_, [&] { return store_.run_states(sweep_id_); })) {
    out[key] = {st.status, st.duration_s, st.images_per_s};
    ids_[key] = st.id;
    // Only completed measurements predict how long a run takes (not crashes or timeouts).
    if (parse_run_status(st.status) == RunStatus::ok && st.duration_s) {
      durations_[key.first].push_back(*st.duration_s);
    }
  }
  return out;
}

std::optional<double> StoreRecorder::measured_duration_s(const RunSpec& spec) {
  auto it = durations_.find(spec.hash);
  if (it == durations_.end() || it->second.empty()) return std::nullopt;
  return std::accumulate(it->second.begin(), it->second.end(), 0.0) /
         static_cast<double>(it->second.size());
}

std::int64_t StoreRecorder::begin(const RunSpec& spec, const std::string& gpu) {
  const std::int64_t id = guarded(store_, [&] {
    return store_.begin_run(sweep_id_, run_spec_json(spec), host_, ::getpid(), gpu);
  });
  ids_[{spec.hash, spec.repeat}] = id;
  return id;
}

void StoreRecorder::heartbeat(std::int64_t id) {
  guarded(store_, [&] { store_.heartbeat(id); });
}

void StoreRecorder::finish(std::int64_t, const nlohmann::json& document) {
  guarded(store_, [&] { store_.record(sweep_id_, document); });
  const ResultDocument doc = result_from_json(document);
  if (doc.ok() && doc.duration_s && doc.run) durations_[doc.run->hash].push_back(*doc.duration_s);
}

void StoreRecorder::mark_stale(const RunSpec& spec, const std::string& reason) {
  auto it = ids_.find({spec.hash, spec.repeat});
  if (it != ids_.end()) guarded(store_, [&] { store_.mark_interrupted(it->second, reason); });
}

void StoreRecorder::device_checked(const std::string& gpu, const DeviceVerdict& verdict) {
  guarded(store_,
          [&] { store_.record_device_check(sweep_id_, gpu, verdict.healthy, verdict.detail); });
}

void StoreRecorder::mark_pruned(const RunSpec& spec) {
  guarded(store_, [&] { store_.mark_pruned(sweep_id_, spec.hash, spec.repeat); });
}

}  // namespace orch::sweep
