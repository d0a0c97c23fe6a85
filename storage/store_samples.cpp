// What a run recorded beside its row (see run_samples.h): samples, steps and batch probes.
#include "storage/store.h"

namespace orch::storage {
namespace {

std::optional<double> opt_double(const Statement& s, int col) {
  if (s.is_null(col)) return std::nullopt;
  return s.column_double(col);
}

std::optional<std::int64_t> opt_int(const Statement& s, int col) {
  if (s.is_null(col)) return std::nullopt;
  return s.column_int(col);
}

// The host's measured window (host_telemetry.measure_window_s); none when not recorded.
std::optional<std::pair<double, double>> host_window(const Database& db, std::int64_t run_id) {
  Statement w(db,
              "SELECT json_extract(document_json, '$.host_telemetry.measure_window_s[0]'), "
              "json_extract(document_json, '$.host_telemetry.measure_window_s[1]') "
              "FROM runs WHERE id = ?");
  w.bind(1, run_id);
  if (w.step() && !w.is_null(0) && !w.is_null(1))
    return std::make_pair(w.column_double(0), w.column_double(1));
  return std::nullopt;
}

void read_gpu_samples(const Database& db, std::int64_t run_id, RunTelemetry& t) {
  Statement s(db,
              "SELECT t_s, gpu_util_pct, power_w, memory_used_bytes FROM telemetry_samples "
              "WHERE run_id = ? AND t_s IS NOT NULL ORDER BY seq");
  s.bind(1, run_id);
  while (s.step()) {
    t.t_s.push_back(s.column_double(0));
    t.gpu_util_pct.push_back(opt_double(s, 1));
    t.power_w.push_back(opt_double(s, 2));
    t.memory_used_bytes.push_back(opt_double(s, 3));
  }
}

void read_host_samples(const Database& db, std::int64_t run_id, RunTelemetry& t) {
  Statement s(db,
              "SELECT t_s, cpu_util_pct, busiest_core_pct FROM host_samples "
              "WHERE run_id = ? AND t_s IS NOT NULL ORDER BY seq");
  s.bind(1, run_id);
  while (s.step()) {
    t.host_t_s.push_back(s.column_double(0));
    t.host_cpu_pct.push_back(opt_double(s, 1));
    t.host_core_pct.push_back(opt_double(s, 2));
  }
}

}  // namespace

RunTelemetry Store::run_telemetry(std::int64_t run_id) const {
  RunTelemetry t;
  Statement doc(db_,
                "SELECT json_extract(document_json, '$.telemetry.measure_window_s[0]'), "
                "json_extract(document_json, '$.telemetry.measure_window_s[1]'), "
                "COALESCE(telemetry_reason, json_extract(document_json, '$.telemetry.reason')) "
                "FROM runs WHERE id = ?");
  doc.bind(1, run_id);
  if (doc.step()) {
    if (!doc.is_null(0) && !doc.is_null(1))
      t.window = std::make_pair(doc.column_double(0), doc.column_double(1));
    if (!doc.is_null(2)) t.reason = doc.column_text(2);
  }
  read_gpu_samples(db_, run_id, t);
  t.host_window = host_window(db_, run_id);
  read_host_samples(db_, run_id, t);
  return t;
}

std::vector<StepRow> Store::run_steps(std::int64_t run_id) const {
  Statement s(
      db_,
      "SELECT step, step_ms, data_wait_ms, loss FROM run_steps WHERE run_id = ? ORDER BY step");
  s.bind(1, run_id);
  std::vector<StepRow> out;
  while (s.step())
    out.push_back({s.column_int(0), opt_double(s, 1), opt_double(s, 2), opt_double(s, 3)});
  return out;
}

SampleSeries Store::sample_series(std::int64_t run_id, SampleTable table) const {
  SampleSeries out;
  // The column names are these constants, never a caller's text, so they may be pasted in.
  const char* name = "telemetry_samples";
  if (table == SampleTable::gpu) {
    out.columns = {"gpu_util_pct",      "mem_util_pct",        "power_w",
                   "sm_clock_mhz",      "mem_clock_mhz",       "temperature_c",
                   "memory_used_bytes", "pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s"};
  } else {
    name = "host_samples";
    out.columns = {"cpu_util_pct", "busiest_core_pct", "load1", "mem_available_bytes"};
  }
  std::string sql = "SELECT seq, t_s";
  for (const auto& c : out.columns) sql += ", " + c;
  sql += std::string(" FROM ") + name + " WHERE run_id = ? ORDER BY seq";
  Statement s(db_, sql);
  s.bind(1, run_id);
  while (s.step()) {
    SampleSeries::Row row{s.column_int(0), opt_double(s, 1), {}};
    for (std::size_t i = 0; i < out.columns.size(); ++i)
      row.values.push_back(opt_double(s, static_cast<int>(i) + 2));
    out.rows.push_back(std::move(row));
  }
  return out;
}

BatchSearchRecord Store::batch_search(std::int64_t run_id) const {
  BatchSearchRecord c;
  Statement doc(db_,
                "SELECT json_extract(document_json, '$.batch_search.mode'), "
                "json_extract(document_json, '$.batch_search.chosen'), "
                "json_extract(document_json, '$.batch_search.search_s'), "
                "json_extract(document_json, '$.batch_search.headroom') "
                "FROM runs WHERE id = ?");
  doc.bind(1, run_id);
  if (doc.step()) {
    if (!doc.is_null(0)) c.mode = doc.column_text(0);
    c.chosen = opt_int(doc, 1);
    c.search_s = opt_double(doc, 2);
    c.headroom = opt_double(doc, 3);
  }
  Statement s(db_,
              "SELECT batch_size, images_per_s, peak_memory_bytes, outcome "
              "FROM batch_probes WHERE run_id = ? ORDER BY seq");
  s.bind(1, run_id);
  while (s.step())
    c.probes.push_back({s.column_int(0), opt_double(s, 1), opt_int(s, 2), s.column_text(3)});
  return c;
}

}  // namespace orch::storage
