// The result document's JSON form, both ways.
#include "result/result_document.h"

#include "result/json_fields.h"

namespace orch {
namespace {

using json = nlohmann::json;

// Each take() moves `key` out of `rest` into `out` when its value has out's type.
void take(json& rest, const char* key, std::optional<std::string>& out) {
  auto it = rest.find(key);
  if (it == rest.end() || !it->is_string()) return;
  out = it->get<std::string>();
  rest.erase(it);
}

void take(json& rest, const char* key, std::optional<std::int64_t>& out) {
  auto it = rest.find(key);
  if (it == rest.end() || !it->is_number_integer()) return;
  out = it->get<std::int64_t>();
  rest.erase(it);
}

// An integer is read as its value (and written back as a float): the number is what matters.
void take(json& rest, const char* key, std::optional<double>& out) {
  auto it = rest.find(key);
  if (it == rest.end() || !it->is_number()) return;
  out = it->get<double>();
  rest.erase(it);
}

void take(json& rest, const char* key, std::optional<bool>& out) {
  auto it = rest.find(key);
  if (it == rest.end() || !it->is_boolean()) return;
  out = it->get<bool>();
  rest.erase(it);
}

// A null section stays in `rest`: a null member means "absent" and would not be written back.
void take(json& rest, const char* key, json& out) {
  auto it = rest.find(key);
  if (it == rest.end() || it->is_null()) return;
  out = std::move(*it);
  rest.erase(it);
}

void take(json& rest, const char* key, std::optional<RunStatus>& out) {
  auto it = rest.find(key);
  if (it == rest.end() || !it->is_string()) return;
  out = parse_run_status(it->get<std::string>());
  if (out) rest.erase(it);
}

void take(json& rest, const char* key, std::optional<FailureClass>& out) {
  auto it = rest.find(key);
  if (it == rest.end() || !it->is_string()) return;
  out = parse_failure_class(it->get<std::string>());
  if (out) rest.erase(it);
}

// `run` as orch writes it: exactly {name, hash, repeat}, two strings and an integer.
void take(json& rest, const char* key, std::optional<RunIdentity>& out) {
  auto it = rest.find(key);
  if (it == rest.end() || !it->is_object() || it->size() != 3) return;
  const json& r = *it;
  if (!r.contains("name") || !r["name"].is_string() || !r.contains("hash") ||
      !r["hash"].is_string() || !r.contains("repeat") || !r["repeat"].is_number_integer()) {
    return;
  }
  out = RunIdentity{r["name"].get<std::string>(), r["hash"].get<std::string>(),
                    r["repeat"].get<std::int64_t>()};
  rest.erase(it);
}

// `outcome` as the sweep writes it: exactly {exit_code, signal, stderr_tail}, the first two
// integers or null.
void take(json& rest, const char* key, std::optional<ProcessOutcome>& out) {
  auto it = rest.find(key);
  if (it == rest.end() || !it->is_object() || it->size() != 3) return;
  const json& o = *it;
  auto int_or_null = [&](const char* k) {
    return o.contains(k) && (o[k].is_null() || o[k].is_number_integer());
  };
  if (!int_or_null("exit_code") || !int_or_null("signal") || !o.contains("stderr_tail") ||
      !o["stderr_tail"].is_string()) {
    return;
  }
  ProcessOutcome p;
  if (!o["exit_code"].is_null()) p.exit_code = o["exit_code"].get<std::int64_t>();
  if (!o["signal"].is_null()) p.signal = o["signal"].get<std::int64_t>();
  p.stderr_tail = o["stderr_tail"].get<std::string>();
  out = std::move(p);
  rest.erase(it);
}

template <typename T>
void put(json& out, const char* key, const std::optional<T>& v) {
  if (v) out[key] = *v;
}

void put(json& out, const char* key, const json& v) {
  if (!v.is_null()) out[key] = v;
}

json nullable(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

std::optional<double> ResultDocument::metric(const char* name) const {
  return json_number(metrics, name);
}

bool ResultDocument::gpu_lost() const {
  if (!telemetry.is_object()) return false;
  auto it = telemetry.find("gpu_lost");
  return it != telemetry.end() && it->is_boolean() && it->get<bool>();
}

json to_json(const ResultDocument& d) {
  json out = d.extra.is_object() ? d.extra : json::object();
  put(out, "format", d.format);
  put(out, "version", d.version);
  if (d.status) out["status"] = to_string(*d.status);
  put(out, "experiment", d.experiment);
  if (d.run) {
    out["run"] = {{"name", d.run->name}, {"hash", d.run->hash}, {"repeat", d.run->repeat}};
  }
  put(out, "config", d.config);
  put(out, "swept", d.swept);
  put(out, "error", d.error);
  put(out, "device", d.device);
  put(out, "gpu", d.gpu);
  put(out, "started_at", d.started_at);
  put(out, "finished_at", d.finished_at);
  put(out, "work_dir", d.work_dir);
  put(out, "duration_s", d.duration_s);
  put(out, "batch_size", d.batch_size);
  put(out, "batch_auto", d.batch_auto);
  put(out, "probe", d.probe);
  if (d.outcome) {
    out["outcome"] = {{"exit_code", nullable(d.outcome->exit_code)},
                      {"signal", nullable(d.outcome->signal)},
                      {"stderr_tail", d.outcome->stderr_tail}};
  }
  if (d.failure_class) out["failure_class"] = to_string(*d.failure_class);
  put(out, "metrics", d.metrics);
  put(out, "counters", d.counters);
  put(out, "steps", d.steps);
  put(out, "environment", d.environment);
  put(out, "telemetry", d.telemetry);
  put(out, "host_telemetry", d.host_telemetry);
  put(out, "profile", d.profile);
  put(out, "batch_search", d.batch_search);
  return out;
}

ResultDocument result_from_json(const json& j) {
  ResultDocument d;
  d.format.reset();
  d.version.reset();
  if (!j.is_object()) return d;
  json rest = j;
  take(rest, "format", d.format);
  take(rest, "version", d.version);
  take(rest, "status", d.status);
  take(rest, "experiment", d.experiment);
  take(rest, "run", d.run);
  take(rest, "config", d.config);
  take(rest, "swept", d.swept);
  take(rest, "error", d.error);
  take(rest, "device", d.device);
  take(rest, "gpu", d.gpu);
  take(rest, "started_at", d.started_at);
  take(rest, "finished_at", d.finished_at);
  take(rest, "work_dir", d.work_dir);
  take(rest, "duration_s", d.duration_s);
  take(rest, "batch_size", d.batch_size);
  take(rest, "batch_auto", d.batch_auto);
  take(rest, "probe", d.probe);
  take(rest, "outcome", d.outcome);
  take(rest, "failure_class", d.failure_class);
  take(rest, "metrics", d.metrics);
  take(rest, "counters", d.counters);
  take(rest, "steps", d.steps);
  take(rest, "environment", d.environment);
  take(rest, "telemetry", d.telemetry);
  take(rest, "host_telemetry", d.host_telemetry);
  take(rest, "profile", d.profile);
  take(rest, "batch_search", d.batch_search);
  d.extra = std::move(rest);
  return d;
}

}  // namespace orch
