// Store::record: one finished result document -> its run row, metrics, steps, telemetry
// samples (the GPU's and the host's) and profile, in one durable transaction, as an upsert so
// that recording it again changes nothing.
#include <stdexcept>

#include "analysis/diagnosis.h"
#include "result/json_dump.h"
#include "storage/profile_rows.h"
#include "storage/row_values.h"
#include "storage/store.h"

namespace orch::storage {
namespace {

// Invalid UTF-8 (a child's stderr tail) is replaced rather than failing the record.
std::string dump(const nlohmann::json& j) { return json_dump(j); }

void check_document(const ResultDocument& doc) {
  if (doc.format != kResultFormat) {
    throw std::invalid_argument("not an orch result document (format is not \"orch.result\")");
  }
  const auto version = doc.version.value_or(0);
  if (version < kOldestResultVersion || version > kResultVersion) {
    throw std::invalid_argument(
        "result document version " + std::to_string(version) + " is not one this orch reads (" +
        std::to_string(kOldestResultVersion) + ".." + std::to_string(kResultVersion) + ")");
  }
  // A status this orch does not know stays in `extra`, as it was written.
  if (!doc.status) {
    throw std::invalid_argument("result document has an unknown status '" +
                                json_text(doc.extra, "status") + "'");
  }
}

void insert_metrics(Database& db, std::int64_t id, const nlohmann::json& metrics) {
  Statement st(db, "INSERT INTO run_metrics (run_id, name, value) VALUES (?1, ?2, ?3)");
  for (const auto& [name, value] : metrics.items()) {
    const auto v = json_number(metrics, name.c_str());
    if (!v) continue;  // nested or textual entries live in document_json only
    st.bind(1, id).bind(2, name).bind(3, *v);
    st.step();
    st.reset();
  }
}

void insert_steps(Database& db, std::int64_t id, const nlohmann::json& steps) {
  if (!steps.is_array()) return;
  Statement st(db, R"(INSERT INTO run_steps (run_id, step, step_ms, data_wait_ms, loss)
                      VALUES (?1, ?2, ?3, ?4, ?5))");
  std::int64_t index = 0;
  for (const auto& s : steps) {
    st.bind(1, id)
        .bind(2, json_integer(s, "step").value_or(index))
        .bind(3, json_number(s, "step_ms"))
        .bind(4, json_number(s, "data_wait_ms"))
        .bind(5, json_number(s, "loss"));
    st.step();
    st.reset();
    ++index;
  }
}

void insert_samples(Database& db, std::int64_t id, const nlohmann::json& telemetry) {
  auto it = telemetry.find("samples");
  if (it == telemetry.end() || !it->is_array()) return;
  // The sample fields, in column order; a null or missing one is stored as NULL.
  static constexpr const char* kReal[] = {"t_s",          "gpu_util_pct", "mem_util_pct",
                                          "power_w",      "sm_clock_mhz", "mem_clock_mhz",
                                          "temperature_c"};
  Statement st(db, R"(INSERT INTO telemetry_samples (run_id, seq, t_s, gpu_util_pct, mem_util_pct,
      power_w, sm_clock_mhz, mem_clock_mhz, temperature_c, memory_used_bytes, pcie_rx_bytes_per_s,
      pcie_tx_bytes_per_s, throttle_reasons)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13))");
  std::int64_t seq = 0;
  for (const auto& s : *it) {
    st.bind(1, id).bind(2, seq++);
    int col = 3;
    for (const char* f : kReal) st.bind(col++, json_number(s, f));
    if (auto v = json_integer(s, "memory_used_bytes"))
      st.bind(10, *v);
    else
      st.bind_null(10);
    st.bind(11, json_number(s, "pcie_rx_bytes_per_s"))
        .bind(12, json_number(s, "pcie_tx_bytes_per_s"));
    if (auto v = json_integer(s, "throttle_reasons"))
      st.bind(13, *v);
    else
      st.bind_null(13);
    st.step();
    st.reset();
  }
}

// The host's samples (the document's host_telemetry, telemetry/host_sampler.h).
void insert_host_samples(Database& db, std::int64_t id, const nlohmann::json& host) {
  if (!host.is_object()) return;
  auto it = host.find("samples");
  if (it == host.end() || !it->is_array()) return;
  Statement st(db, R"(INSERT INTO host_samples (run_id, seq, t_s, cpu_util_pct, busiest_core_pct,
      busiest_core, load1, mem_available_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8))");
  std::int64_t seq = 0;
  for (const auto& s : *it) {
    st.bind(1, id)
        .bind(2, seq++)
        .bind(3, json_number(s, "t_s"))
        .bind(4, json_number(s, "cpu_util_pct"))
        .bind(5, json_number(s, "busiest_core_pct"));
    if (auto v = json_integer(s, "busiest_core"))
      st.bind(6, *v);
    else
      st.bind_null(6);
    st.bind(7, json_number(s, "load1"));
    if (auto v = json_integer(s, "mem_available_bytes"))
      st.bind(8, *v);
    else
      st.bind_null(8);
    st.step();
    st.reset();
  }
}

// The probe curve of a `batch_size: auto` search, in the order probed. The document keeps
// everything (notes included); the table is the curve, for SQL and the report.
void insert_batch_probes(Database& db, std::int64_t id, const nlohmann::json& search) {
  if (!search.is_object()) return;
  auto it = search.find("probes");
  if (it == search.end() || !it->is_array()) return;
  Statement st(db, R"(INSERT INTO batch_probes (run_id, seq, batch_size, images_per_s,
      peak_memory_bytes, outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6))");
  std::int64_t seq = 0;
  for (const auto& p : *it) {
    const auto batch = json_integer(p, "batch");
    if (!batch) continue;
    // Documents written before probes measured anything say only whether the batch fitted.
    std::string outcome = json_text(p, "outcome");
    if (outcome.empty()) outcome = p.value("fits", false) ? "ok" : "oom";
    st.bind(1, id).bind(2, seq++).bind(3, *batch).bind(4, json_number(p, "images_per_s"));
    if (auto v = json_integer(p, "peak_memory_bytes"))
      st.bind(5, *v);
    else
      st.bind_null(5);
    st.bind(6, outcome);
    st.step();
    st.reset();
  }
}

}  // namespace

std::int64_t Store::record(std::int64_t sweep_id, const nlohmann::json& document) {
  const ResultDocument doc = result_from_json(document);
  check_document(doc);
  RowValues row = run_identity_values(sweep_id, doc);
  auto object_or_empty = [](const nlohmann::json& j) {
    return j.is_object() ? j : nlohmann::json::object();
  };
  const nlohmann::json metrics = object_or_empty(doc.metrics);
  const nlohmann::json env = object_or_empty(doc.environment);
  const ProcessOutcome outcome = doc.outcome.value_or(ProcessOutcome{});
  const auto diagnosis = analysis::diagnose(doc);
  const CoreMetrics core = doc.core_metrics();
  // Documents from `orch run` and cluster tasks get the class the sweep would give them.
  // A run the environment spoiled is recorded `interrupted`, with its class kept.
  const std::optional<FailureClass> failure =
      doc.failure_class ? doc.failure_class : classify_failure(doc);
  row.set("status", to_string(*doc.status))
      .set_text("error", doc.error.value_or(""))
      .set_text("failure_class", failure ? to_string(*failure) : "")
      .set("batch_auto", std::int64_t{doc.batch_auto.value_or(false) ? 1 : 0})
      .set_text("device", doc.device.value_or(""))
      .set_text("gpu", doc.gpu.value_or(""))
      .set("attempts", std::int64_t{1})
      .set_text("started_at", doc.started_at.value_or(""))
      .set_text("finished_at", doc.finished_at.value_or(""))
      .set("duration_s", doc.duration_s)
      .set("exit_code", outcome.exit_code)
      .set("term_signal", outcome.signal)
      .set_text("stderr_tail", outcome.stderr_tail)
      .set("images_per_s", core.images_per_s)  // the runs table's columns of the same names
      .set("step_ms_mean", core.step_ms_mean)
      .set_text("diagnosis", diagnosis ? diagnosis->label : "")
      .set_text("diagnosis_detail", diagnosis ? diagnosis->detail : "")
      .set_text("gpu_name", json_text(env, "gpu_name"))
      .set_text("driver_version", json_text(env, "driver_version"))
      .set_text("cuda_version", json_text(env, "cuda_runtime_version"))
      .set_text("cudnn_version", json_text(env, "cudnn_version"))
      .set_text("torch_version", json_text(env, "torch_version"))
      .set_text("hostname", json_text(env, "hostname"));
  const bool has_tel = doc.telemetry.is_object();
  const nlohmann::json telemetry = object_or_empty(doc.telemetry);
  row.set("telemetry_available", has_tel ? json_integer(telemetry, "available") : std::nullopt)
      .set_text("telemetry_reason", json_text(telemetry, "reason"))
      .set("gpu_lost", has_tel ? json_integer(telemetry, "gpu_lost") : std::nullopt)
      .set("environment_json", dump(env))
      .set("document_json", dump(document));

  Transaction tx(db_);
  Statement up(
      db_, upsert_sql("runs", row, "sweep_id, config_hash, repeat",
                      {"attempts = MAX(runs.attempts, 1)", "gpu = COALESCE(excluded.gpu, runs.gpu)",
                       "started_at = COALESCE(excluded.started_at, runs.started_at)"}));
  bind_row(up, row);
  up.step();
  const std::int64_t id = run_id_of(db_, sweep_id, doc.run->hash, doc.run->repeat);
  delete_run_children(db_, id);
  insert_metrics(db_, id, metrics);
  insert_steps(db_, id, doc.steps);
  insert_samples(db_, id, telemetry);
  insert_host_samples(db_, id, doc.host_telemetry);
  insert_profile(db_, id, document);
  insert_batch_probes(db_, id, doc.batch_search);
  touch_sweep(sweep_id);
  tx.commit();
  return id;
}

}  // namespace orch::storage
