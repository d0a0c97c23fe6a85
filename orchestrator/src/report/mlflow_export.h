// `orch export --to mlflow`: a sweep's runs pushed to an MLflow tracking server through its REST
// API (/api/2.0/mlflow/...), one MLflow run per orch run: the flattened configuration as params,
// the metrics (throughput, step times, memory, power, ...) and the per-step and telemetry time
// series as metrics, the sweep, configuration hash, status, diagnosis and environment as tags.
// Each MLflow run carries its orch run's identity (tag orch.key); a push finds the runs already
// there first, so pushing twice creates nothing twice. docs/mlflow.md describes the mapping.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "report/http_client.h"
#include "storage/store.h"

namespace orch {

/// A failure talking to the tracking server: no answer (kUnreachable), an error answer of the
/// server's own (kServerError, HTTP 5xx) or a request it refused (kRejected, any other status
/// than 200). The message names the URI, the request and, for an answer, its status and body.
class MlflowError : public std::runtime_error {
 public:
  enum class Kind { kUnreachable, kServerError, kRejected };
  MlflowError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

/// The tracking URI as the REST API's base: http:// or https://, a host, an optional port and
/// path prefix, no trailing slash. Anything else (file:, databricks, sqlite:, a bare host) is an
/// InputError saying what is accepted.
std::string mlflow_base_url(const std::string& tracking_uri);

/// `name` with every character MLflow refuses in a key (it takes letters, digits, `_ - . / `
/// and space) replaced by `_`, at most 250 characters.
std::string mlflow_key(const std::string& name);

struct MlflowMetric {
  std::string key;
  double value = 0;  ///< NaN and infinities travel as MLflow's "NaN", "Infinity", "-Infinity"
  std::int64_t timestamp_ms = 0;
  std::int64_t step = 0;
};

/// What one orch run becomes in MLflow.
struct MlflowRunData {
  std::string key;          ///< the run's identity (tag orch.key): its sweep, hash and repeat
  std::string sweep_key;    ///< its sweep's identity (tag orch.sweep_key): name and creation
  std::string finished_at;  ///< tag orch.finished_at: a later retry of the run differs here
  std::string run_name;     ///< the configuration's name, with #repeat after the first repeat
  std::string status;       ///< FINISHED (ok, pruned), FAILED, KILLED (interrupted, skipped)
  std::int64_t start_ms = 0, end_ms = 0;
  std::vector<std::pair<std::string, std::string>> params, tags;
  std::vector<MlflowMetric> metrics;
};

/// The MLflow run of `run` (of `sweep`), with its steps and telemetry samples read from `store`.
MlflowRunData mlflow_run_data(const storage::Store& store, const storage::SweepInfo& sweep,
                              const storage::RunRecord& run);

/// The bodies of the runs/log-batch requests that log `data` into MLflow run `run_id`, each
/// within MLflow's limits (1000 metrics, 100 params, 100 tags, 1000 items in all, 1 MB),
/// params and tags first.
std::vector<nlohmann::json> mlflow_log_batches(const MlflowRunData& data,
                                               const std::string& run_id);

struct MlflowPushResult {
  std::string experiment_id;
  bool experiment_created = false;
  int created = 0;   ///< new MLflow runs
  int already = 0;   ///< complete MLflow runs of the same orch run (and the same attempt) found
  int replaced = 0;  ///< found but incomplete (an interrupted push) or of an earlier attempt:
                     ///< deleted and pushed again
  int running = 0;   ///< orch runs still running, not pushed (a later push takes them)
};

/// Pushes `runs` of `sweep` into MLflow experiment `experiment` (created when missing) at
/// `tracking_uri`, counting into `result` as it goes. A run is complete in MLflow once its
/// last request (the tag orch.push = complete) is answered. Throws MlflowError when the server
/// cannot be reached or refuses a request; `result` then counts what was pushed before it.
void push_to_mlflow(HttpClient& http, const std::string& tracking_uri,
                    const std::string& experiment, const storage::Store& store,
                    const storage::SweepInfo& sweep, const std::vector<storage::RunRecord>& runs,
                    MlflowPushResult& result);

}  // namespace orch
