// The push of a sweep's runs to an MLflow tracking server (REST API 2.0).
#include "report/mlflow_export.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <map>

#include "plan/content_hash.h"
#include "report/input_error.h"
#include "result/config_flatten.h"
#include "result/json_dump.h"

namespace orch {
namespace {

// MLflow's own limits (mlflow/utils/validation.py): a log-batch request holds at most 1000
// metrics, 100 params and 100 tags, 1000 items in all, in at most 1 MB of JSON; a key at most
// 250 characters, a param value 6000 (500 before MLflow 2.x), a tag value 5000 on every backend.
constexpr std::size_t kBatchMetrics = 1000, kBatchParams = 100, kBatchTags = 100;
constexpr std::size_t kBatchItems = 1000, kBatchBytes = 900 * 1024;  // under 1 MB, with margin
constexpr std::size_t kKeyLength = 250, kParamLength = 6000, kTagLength = 5000;
constexpr const char* kApi = "/api/2.0/mlflow/";

std::string truncated(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  std::size_t cut = n - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  return s.substr(0, cut) + "...";
}

std::string cell_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return json_dump(v);
}

// ISO 8601 UTC (YYYY-MM-DDThh:mm:ssZ, fractions of a second allowed) as Unix milliseconds;
// 0 when empty or unreadable.
std::int64_t iso_ms(const std::string& iso) {
  std::tm tm{};
  const char* rest = strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest) return 0;
  std::int64_t ms = static_cast<std::int64_t>(timegm(&tm)) * 1000;
  if (*rest == '.') {
    double frac = std::atof(rest);
    ms += static_cast<std::int64_t>(std::llround(frac * 1000));
  }
  return ms;
}

std::int64_t now_ms() { return static_cast<std::int64_t>(std::time(nullptr)) * 1000; }

std::string mlflow_status(const std::string& orch_status) {
  if (orch_status == "ok" || orch_status == "pruned") return "FINISHED";
  if (orch_status == "interrupted" || orch_status == "skipped") return "KILLED";
  if (orch_status == "running") return "RUNNING";
  return "FAILED";  // failed, oom, timeout, diverged
}

nlohmann::json metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

// The measured columns of one samples table as series `prefix/column`, at step = the sample's
// index and the time the sample was taken (the run's start + t_s).
void add_series(const storage::SampleSeries& series, const std::string& prefix,
                std::int64_t start_ms, std::vector<MlflowMetric>& out) {
  for (const auto& row : series.rows) {
    const std::int64_t t = start_ms + (row.t_s ? std::llround(*row.t_s * 1000) : 0);
    for (std::size_t i = 0; i < series.columns.size(); ++i) {
      if (!row.values[i]) continue;
      out.push_back({prefix + "/" + series.columns[i], *row.values[i], t, row.seq});
    }
  }
}

// The run's steps: step/step_ms, step/data_wait_ms, step/loss at their step index. A step has no
// time of its own: all are stamped with the run's start.
void add_steps(const std::vector<storage::StepRow>& steps, std::int64_t start_ms,
               std::vector<MlflowMetric>& out) {
  for (const auto& s : steps) {
    if (s.step_ms) out.push_back({"step/step_ms", *s.step_ms, start_ms, s.step});
    if (s.data_wait_ms) out.push_back({"step/data_wait_ms", *s.data_wait_ms, start_ms, s.step});
    if (s.loss) out.push_back({"step/loss", *s.loss, start_ms, s.step});
  }
}

class Api {
 public:
  Api(HttpClient& http, std::string uri) : http_(http), uri_(std::move(uri)) {
    base_ = mlflow_base_url(uri_);
  }

  nlohmann::json get(const std::string& endpoint, const std::string& query) {
    return call("GET", endpoint + "?" + query, "");
  }
  nlohmann::json post(const std::string& endpoint, const nlohmann::json& body) {
    return call("POST", endpoint, json_dump(body));
  }
  /// The last answer's status and MLflow error_code ("RESOURCE_DOES_NOT_EXIST", ...).
  long status() const { return status_; }
  const std::string& error_code() const { return error_code_; }
  const std::string& uri() const { return uri_; }

  /// Throws the MlflowError for the last answer, which was not 200.
  [[noreturn]] void fail(const std::string& request) const {
    // On one line: an HTML error page's line breaks and indentation become single spaces.
    std::string body;
    for (char c : body_) {
      const bool space = c == '\n' || c == '\r' || c == '\t' || c == ' ';
      if (!space) {
        body += c;
      } else if (!body.empty() && body.back() != ' ') {
        body += ' ';
      }
    }
    while (!body.empty() && body.back() == ' ') body.pop_back();
    body = truncated(body, 600);
    throw MlflowError(
        status_ >= 500 ? MlflowError::Kind::kServerError : MlflowError::Kind::kRejected,
        fmt::format("the MLflow tracking server at {} answered HTTP {} to {}: {}", uri_, status_,
                    request, body.empty() ? "(empty body)" : body));
  }

  /// post(), where an answer other than 200 throws (fail()).
  nlohmann::json must(const std::string& endpoint, const nlohmann::json& body) {
    nlohmann::json r = post(endpoint, body);
    if (status_ != 200) fail(std::string("POST ") + kApi + endpoint);
    return r;
  }

 private:
  nlohmann::json call(const std::string& method, const std::string& endpoint,
                      const std::string& body) {
    const std::string path = std::string(kApi) + endpoint;
    HttpResponse r;
    try {
      r = http_.request(method, base_ + path, body);
    } catch (const HttpTransportError& e) {
      const auto q = path.find('?');
      throw MlflowError(MlflowError::Kind::kUnreachable,
                        fmt::format("cannot reach the MLflow tracking server at {} ({} {}): {}",
                                    uri_, method, path.substr(0, q), e.what()));
    }
    status_ = r.status;
    body_ = r.body;
    error_code_.clear();
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_object()) error_code_ = j.value("error_code", std::string());
    if (status_ == 200 && !j.is_object()) {
      throw MlflowError(
          MlflowError::Kind::kRejected,
          fmt::format("{} is not an MLflow tracking server: {} {} answered HTTP 200 "
                      "with something other than a JSON object: {}",
                      uri_, method, path.substr(0, path.find('?')), truncated(r.body, 200)));
    }
    return j.is_object() ? j : nlohmann::json::object();
  }

  HttpClient& http_;
  std::string uri_, base_, body_, error_code_;
  long status_ = 0;
};

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// The experiment's id, created when the server has none of that name.
std::string experiment_id(Api& api, const std::string& name, bool& created) {
  nlohmann::json r = api.get("experiments/get-by-name", "experiment_name=" + url_encode(name));
  if (api.status() == 200) {
    const auto& e = r.value("experiment", nlohmann::json::object());
    if (e.value("lifecycle_stage", "") == "deleted") {
      throw MlflowError(MlflowError::Kind::kRejected,
                        fmt::format("the MLflow experiment '{}' at {} is deleted: restore it "
                                    "(mlflow experiments restore) or push to another --experiment",
                                    name, api.uri()));
    }
    return e.value("experiment_id", std::string());
  }
  if (api.error_code() != "RESOURCE_DOES_NOT_EXIST") {
    api.fail(std::string("GET ") + kApi + "experiments/get-by-name");
  }
  created = true;
  return api.must("experiments/create", {{"name", name}}).value("experiment_id", "");
}

struct Existing {
  std::string run_id, finished_at;
  bool complete = false;
};

// The MLflow runs of this sweep already in the experiment, by orch.key.
std::map<std::string, std::vector<Existing>> existing_runs(Api& api, const std::string& exp_id,
                                                           const std::string& sweep_key) {
  std::map<std::string, std::vector<Existing>> out;
  std::string token;
  do {
    nlohmann::json body = {{"experiment_ids", {exp_id}},
                           {"filter", "tags.`orch.sweep_key` = '" + sweep_key + "'"},
                           {"max_results", 1000}};
    if (!token.empty()) body["page_token"] = token;
    nlohmann::json r = api.must("runs/search", body);
    for (const auto& run : r.value("runs", nlohmann::json::array())) {
      Existing e;
      e.run_id = run.value("info", nlohmann::json::object()).value("run_id", "");
      std::string key;
      const auto data = run.value("data", nlohmann::json::object());
      for (const auto& t : data.value("tags", nlohmann::json::array())) {
        const std::string k = t.value("key", ""), v = t.value("value", "");
        if (k == "orch.key") key = v;
        if (k == "orch.finished_at") e.finished_at = v;
        if (k == "orch.push") e.complete = v == "complete";
      }
      if (!key.empty() && !e.run_id.empty()) out[key].push_back(e);
    }
    token = r.value("next_page_token", "");
  } while (!token.empty());
  return out;
}

}  // namespace

std::string mlflow_base_url(const std::string& tracking_uri) {
  std::string u = tracking_uri;
  const auto scheme_end = u.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : u.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    throw InputError(fmt::format(
        "--tracking-uri '{}' is not an http:// or https:// URI: orch pushes to an MLflow tracking "
        "server through its REST API (start one with `mlflow server`, e.g. "
        "--tracking-uri http://localhost:5000)",
        tracking_uri));
  }
  while (u.size() > scheme_end + 3 && u.back() == '/') u.pop_back();
  const std::string rest = u.substr(scheme_end + 3);
  const std::string host = rest.substr(0, rest.find_first_of("/?#"));
  if (host.empty() || host.find_first_of(" \t\r\n") != std::string::npos ||
      rest.find_first_of("?#") != std::string::npos) {
    throw InputError(
        fmt::format("--tracking-uri '{}' names no server: give scheme, host and port, e.g. "
                    "http://localhost:5000 (a path prefix is allowed, a query or fragment is not)",
                    tracking_uri));
  }
  return u;
}

std::string mlflow_key(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    const bool ok = std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == ' ';
    out += ok ? static_cast<char>(c) : '_';
  }
  return out.substr(0, kKeyLength);
}

namespace {

// Tags: who the run is, how it ended, and where it ran. Two keys that become one once
// sanitised keep the first.
std::vector<std::pair<std::string, std::string>> run_tags(const MlflowRunData& d,
                                                          const storage::SweepInfo& sweep,
                                                          const storage::RunRecord& r) {
  std::map<std::string, std::string> tags;
  auto tag = [&tags](const std::string& k, const std::string& v) {
    if (!v.empty()) tags.emplace(mlflow_key(k), truncated(v, kTagLength));
  };
  tag("orch.key", d.key);
  tag("orch.sweep_key", d.sweep_key);
  tag("orch.finished_at", r.finished_at);
  tag("orch.sweep", r.sweep);
  tag("orch.sweep_created_at", sweep.created_at);
  tag("orch.experiment", r.experiment);
  tag("orch.name", r.name);
  tag("orch.config_hash", r.config_hash);
  tag("orch.repeat", std::to_string(r.repeat));
  tag("orch.run_id", std::to_string(r.id));
  tag("orch.status", r.status);
  tag("orch.attempts", std::to_string(r.attempts));
  tag("orch.started_at", r.started_at);
  tag("orch.device", r.device);
  tag("orch.gpu", r.gpu);
  tag("orch.batch_auto", r.batch_auto ? "true" : "");
  tag("orch.error", r.error);
  tag("orch.failure_class", r.failure_class);
  tag("orch.diagnosis", r.diagnosis);
  tag("orch.diagnosis_detail", r.diagnosis_detail);
  if (r.exit_code) tag("orch.exit_code", std::to_string(*r.exit_code));
  if (r.term_signal) tag("orch.term_signal", std::to_string(*r.term_signal));
  if (r.rung) tag("orch.rung", std::to_string(*r.rung));
  tag("env.gpu_name", r.gpu_name);
  tag("env.driver_version", r.driver_version);
  tag("env.cuda_version", r.cuda_version);
  tag("env.cudnn_version", r.cudnn_version);
  tag("env.torch_version", r.torch_version);
  tag("env.hostname", r.hostname);
  std::map<std::string, nlohmann::json> env;
  flatten_json(r.environment, "env", env);
  for (const auto& [k, v] : env) {
    if (!v.is_null()) tag(k, cell_text(v));
  }
  return {tags.begin(), tags.end()};
}

}  // namespace

MlflowRunData mlflow_run_data(const storage::Store& store, const storage::SweepInfo& sweep,
                              const storage::RunRecord& r) {
  MlflowRunData d;
  d.sweep_key = content_hash_hex(sweep.name + '\n' + sweep.created_at);
  d.key = content_hash_hex(sweep.name + '\n' + sweep.created_at + '\n' + r.config_hash + '\n' +
                           std::to_string(r.repeat));
  d.finished_at = r.finished_at;
  d.run_name = r.repeat == 0 ? r.name : fmt::format("{}#{}", r.name, r.repeat);
  d.status = mlflow_status(r.status);
  d.start_ms = iso_ms(r.started_at);
  d.end_ms = iso_ms(r.finished_at);
  if (d.start_ms == 0) d.start_ms = d.end_ms ? d.end_ms : iso_ms(sweep.created_at);
  if (d.start_ms == 0) d.start_ms = now_ms();
  if (d.end_ms == 0) d.end_ms = d.start_ms;

  // Params: the resolved configuration, flattened as in the CSV export (model.plugin,
  // precision.dtype, batch_size, ...). Two keys that become one once sanitised keep the first.
  std::map<std::string, nlohmann::json> config;
  flatten_json(r.config, "", config);
  std::map<std::string, std::string> params;
  for (const auto& [k, v] : config)
    params.emplace(mlflow_key(k), truncated(cell_text(v), kParamLength));
  d.params.assign(params.begin(), params.end());

  d.tags = run_tags(d, sweep, r);

  // Metrics: every scalar the run recorded, at step 0 and the run's end, then the series.
  std::map<std::string, double> scalars;
  for (const auto& [k, v] : r.metrics) scalars.emplace(mlflow_key(k), v);
  if (r.duration_s) scalars.emplace("duration_s", *r.duration_s);
  for (const auto& [k, v] : scalars) d.metrics.push_back({k, v, d.end_ms, 0});
  add_steps(store.run_steps(r.id), d.start_ms, d.metrics);
  add_series(store.sample_series(r.id, storage::SampleTable::gpu), "gpu", d.start_ms, d.metrics);
  add_series(store.sample_series(r.id, storage::SampleTable::host), "host", d.start_ms, d.metrics);
  return d;
}

std::vector<nlohmann::json> mlflow_log_batches(const MlflowRunData& data,
                                               const std::string& run_id) {
  std::vector<nlohmann::json> out;
  nlohmann::json batch;
  std::size_t bytes = 0;
  auto fresh = [&] {
    batch = {{"run_id", run_id},
             {"metrics", nlohmann::json::array()},
             {"params", nlohmann::json::array()},
             {"tags", nlohmann::json::array()}};
    bytes = 100;
  };
  auto items = [&] {
    return batch["metrics"].size() + batch["params"].size() + batch["tags"].size();
  };
  auto add = [&](const char* kind, std::size_t limit, nlohmann::json item) {
    const std::size_t size = json_dump(item).size() + 1;
    if (batch[kind].size() >= limit || items() >= kBatchItems || bytes + size > kBatchBytes) {
      out.push_back(std::move(batch));
      fresh();
    }
    batch[kind].push_back(std::move(item));
    bytes += size;
  };
  fresh();
  for (const auto& [k, v] : data.params) add("params", kBatchParams, {{"key", k}, {"value", v}});
  for (const auto& [k, v] : data.tags) add("tags", kBatchTags, {{"key", k}, {"value", v}});
  for (const auto& m : data.metrics) {
    add("metrics", kBatchMetrics,
        {{"key", m.key},
         {"value", metric_value(m.value)},
         {"timestamp", m.timestamp_ms},
         {"step", m.step}});
  }
  if (items() > 0) out.push_back(std::move(batch));
  return out;
}

void push_to_mlflow(HttpClient& http, const std::string& tracking_uri,
                    const std::string& experiment, const storage::Store& store,
                    const storage::SweepInfo& sweep, const std::vector<storage::RunRecord>& runs,
                    MlflowPushResult& result) {
  Api api(http, tracking_uri);
  result.experiment_id = experiment_id(api, experiment, result.experiment_created);
  const std::string sweep_key = content_hash_hex(sweep.name + '\n' + sweep.created_at);
  auto existing = existing_runs(api, result.experiment_id, sweep_key);
  for (const auto& r : runs) {
    if (r.status == "running") {
      ++result.running;
      continue;
    }
    const MlflowRunData data = mlflow_run_data(store, sweep, r);
    auto& found = existing[data.key];
    bool there = false;
    for (const auto& e : found) there = there || (e.complete && e.finished_at == data.finished_at);
    if (there) {
      ++result.already;
      continue;
    }
    // Incomplete (a push that stopped half-way) or of an earlier attempt of the run: deleted,
    // so the experiment holds the run once, as the database has it now.
    for (const auto& e : found) api.must("runs/delete", {{"run_id", e.run_id}});
    const bool replacing = !found.empty();
    found.clear();

    nlohmann::json create = {{"experiment_id", result.experiment_id},
                             {"run_name", data.run_name},
                             {"start_time", data.start_ms},
                             {"tags",
                              {{{"key", "orch.key"}, {"value", data.key}},
                               {{"key", "orch.sweep_key"}, {"value", data.sweep_key}},
                               {{"key", "orch.finished_at"}, {"value", data.finished_at}}}}};
    const std::string run_id = api.must("runs/create", create)
                                   .value("run", nlohmann::json::object())
                                   .value("info", nlohmann::json::object())
                                   .value("run_id", "");
    if (run_id.empty()) {
      throw MlflowError(MlflowError::Kind::kRejected,
                        fmt::format("the MLflow tracking server at {} answered runs/create "
                                    "without a run_id",
                                    tracking_uri));
    }
    for (const auto& batch : mlflow_log_batches(data, run_id)) {
      api.must("runs/log-batch", batch);
    }
    api.must("runs/update",
             {{"run_id", run_id}, {"status", data.status}, {"end_time", data.end_ms}});
    api.must("runs/set-tag", {{"run_id", run_id}, {"key", "orch.push"}, {"value", "complete"}});
    (replacing ? result.replaced : result.created) += 1;
  }
}

}  // namespace orch
