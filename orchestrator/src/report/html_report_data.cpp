// Reading one sweep's report data from the store.
#include "report/html_report_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>

#include "report/metric_catalog.h"
#include "report/shown_runs.h"
#include "storage/sqlite.h"

namespace orch {
namespace {

std::optional<double> opt_double(const storage::Statement& s, int col) {
  if (s.is_null(col)) return std::nullopt;
  return s.column_double(col);
}

std::optional<std::int64_t> opt_int(const storage::Statement& s, int col) {
  if (s.is_null(col)) return std::nullopt;
  return s.column_int(col);
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The host's samples of run `id` into `t` (nothing for a run recorded without them).
void read_host_timeline(const storage::Database& db, std::int64_t id, RunTimeline& t) {
  storage::Statement w(
      db,
      "SELECT json_extract(document_json, '$.host_telemetry.measure_window_s[0]'), "
      "json_extract(document_json, '$.host_telemetry.measure_window_s[1]') "
      "FROM runs WHERE id = ?");
  w.bind(1, id);
  if (w.step() && !w.is_null(0) && !w.is_null(1))
    t.host_window = std::make_pair(w.column_double(0), w.column_double(1));
  storage::Statement s(db,
                       "SELECT t_s, cpu_util_pct, busiest_core_pct FROM host_samples "
                       "WHERE run_id = ? AND t_s IS NOT NULL ORDER BY seq");
  s.bind(1, id);
  while (s.step()) {
    t.host_t_s.push_back(s.column_double(0));
    t.host_cpu_pct.push_back(opt_double(s, 1));
    t.host_core_pct.push_back(opt_double(s, 2));
  }
}

RunTimeline read_timeline(const storage::Database& db, const storage::RunRecord& r) {
  RunTimeline t;
  t.run_id = r.id;
  t.name = r.name;
  t.status = r.status;
  t.repeat = r.repeat;
  storage::Statement doc(
      db,
      "SELECT json_extract(document_json, '$.telemetry.measure_window_s[0]'), "
      "json_extract(document_json, '$.telemetry.measure_window_s[1]'), "
      "COALESCE(telemetry_reason, json_extract(document_json, '$.telemetry.reason')) "
      "FROM runs WHERE id = ?");
  doc.bind(1, r.id);
  if (doc.step()) {
    if (!doc.is_null(0) && !doc.is_null(1))
      t.window = std::make_pair(doc.column_double(0), doc.column_double(1));
    if (!doc.is_null(2)) t.reason = doc.column_text(2);
  }
  storage::Statement s(
      db,
      "SELECT t_s, gpu_util_pct, power_w, memory_used_bytes FROM telemetry_samples "
      "WHERE run_id = ? AND t_s IS NOT NULL ORDER BY seq");
  s.bind(1, r.id);
  while (s.step()) {
    t.t_s.push_back(s.column_double(0));
    t.gpu_util_pct.push_back(opt_double(s, 1));
    t.power_w.push_back(opt_double(s, 2));
    t.memory_used_bytes.push_back(opt_double(s, 3));
  }
  read_host_timeline(db, r.id, t);
  if (t.t_s.empty() && t.reason.empty()) {
    t.reason =
        r.status == "ok" ? "no telemetry samples were recorded" : "the run recorded no telemetry";
  }
  return t;
}

ProbeCurve read_probe_curve(const storage::Database& db, const storage::RunRecord& r) {
  ProbeCurve c;
  c.name = r.name;
  c.repeat = r.repeat;
  storage::Statement doc(db,
                         "SELECT json_extract(document_json, '$.batch_search.mode'), "
                         "json_extract(document_json, '$.batch_search.chosen'), "
                         "json_extract(document_json, '$.batch_search.search_s'), "
                         "json_extract(document_json, '$.batch_search.headroom') "
                         "FROM runs WHERE id = ?");
  doc.bind(1, r.id);
  if (doc.step()) {
    if (!doc.is_null(0)) c.mode = doc.column_text(0);
    c.chosen = opt_int(doc, 1);
    c.search_s = opt_double(doc, 2);
    c.headroom = opt_double(doc, 3);
  }
  storage::Statement s(db,
                       "SELECT batch_size, images_per_s, peak_memory_bytes, outcome "
                       "FROM batch_probes WHERE run_id = ? ORDER BY seq");
  s.bind(1, r.id);
  while (s.step()) {
    c.probes.push_back({s.column_int(0), opt_double(s, 1), opt_int(s, 2), s.column_text(3)});
  }
  return c;
}

// The configuration's ok runs in every sweep created up to `sweep` (this one included),
// grouped by sweep, in creation order.
TrendSeries read_trend(const storage::Database& db, const storage::SweepInfo& sweep,
                       const RankedConfig& config) {
  TrendSeries t;
  t.name = config.name;
  t.config_hash = config.config_hash;
  storage::Statement s(db, R"(
      SELECT s.id, s.name, s.created_at, r.images_per_s, r.driver_version, r.cudnn_version
      FROM runs r JOIN sweeps s ON s.id = r.sweep_id
      WHERE r.config_hash = ?1 AND r.status = 'ok' AND r.images_per_s IS NOT NULL
        AND (s.created_at < ?2 OR (s.created_at = ?2 AND s.id <= ?3))
      ORDER BY s.created_at, s.id, r.repeat)");
  s.bind(1, config.config_hash).bind(2, sweep.created_at).bind(3, sweep.id);
  std::int64_t current = -1;
  std::vector<double> values;
  auto flush = [&] {
    if (!values.empty()) t.points.back().stats = storage::summarize(values);
    values.clear();
  };
  while (s.step()) {
    if (s.column_int(0) != current) {
      flush();
      current = s.column_int(0);
      TrendPoint p;
      p.sweep = s.column_text(1);
      p.created_at = s.column_text(2);
      p.driver_version = s.is_null(4) ? "" : s.column_text(4);
      p.cudnn_version = s.is_null(5) ? "" : s.column_text(5);
      t.points.push_back(std::move(p));
    }
    values.push_back(s.column_double(3));
  }
  flush();
  return t;
}

}  // namespace

ReportData gather_report_data(storage::Store& store, const storage::SweepInfo& sweep) {
  ReportData d;
  d.sweep = sweep;
  d.generated_at = utc_now();
  const ShownRuns shown = shown_runs(store, sweep);  // the latest plan revision
  d.runs = shown.runs;
  d.halving = halving_status(shown);
  d.time = store.sweep_time(sweep.id);
  d.ranking =
      rank_runs(d.runs, require_metric("images_per_s"), 0, Diverged::leave_out, shown.baseline);
  if (d.ranking.rows.size() >= 2) {
    // After: the leader, or the next one when the leader is the baseline itself.
    const auto& after =
        d.ranking.rows.front().baseline ? d.ranking.rows[1] : d.ranking.rows.front();
    d.best = select_runs(store, d.runs, "hash:" + after.config_hash);
    // Before: the experiment's `baseline:`, else the slowest by its mean (a noisy configuration
    // may rank below it, ranking.h).
    auto before = std::find_if(d.ranking.rows.begin(), d.ranking.rows.end(),
                               [](const auto& c) { return c.baseline; });
    if (before == d.ranking.rows.end()) {
      before = std::min_element(
          d.ranking.rows.begin(), d.ranking.rows.end(), [&](const auto& x, const auto& y) {
            return d.ranking.metric.better == Better::kHigher ? x.stats.mean < y.stats.mean
                                                              : x.stats.mean > y.stats.mean;
          });
    }
    d.baseline = select_runs(store, d.runs, "hash:" + before->config_hash);
  }

  const storage::Database& db = store.database();  // read only: samples, windows, the views

  // Timelines in ranking order (then repeat), runs of unranked configurations after.
  std::map<std::string, int> position;
  for (const auto& c : d.ranking.rows) position[c.config_hash] = c.position;
  std::vector<const storage::RunRecord*> order;
  for (const auto& r : d.runs) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [&](const auto* a, const auto* b) {
    const int pa = position.count(a->config_hash) ? position[a->config_hash] : 1 << 20;
    const int pb = position.count(b->config_hash) ? position[b->config_hash] : 1 << 20;
    if (pa != pb) return pa < pb;
    if (a->name != b->name) return a->name < b->name;
    return a->repeat < b->repeat;
  });
  for (const auto* r : order) d.timelines.push_back(read_timeline(db, *r));

  storage::Statement env(db, "SELECT environment_json FROM runs WHERE sweep_id = ? ORDER BY id");
  env.bind(1, sweep.id);
  while (env.step()) {
    nlohmann::json e;
    if (!env.is_null(0)) e = nlohmann::json::parse(env.column_text(0), nullptr, false);
    d.environments.push_back(e.is_discarded() ? nlohmann::json() : e);
  }

  storage::Statement f(
      db,
      "SELECT run_id, name, repeat, status, attempts, error, exit_code, term_signal, "
      "stderr_tail FROM failures WHERE sweep = ? ORDER BY name, repeat");
  f.bind(1, sweep.name);
  while (f.step()) {
    FailureRow row;
    row.run_id = f.column_int(0);
    row.name = f.column_text(1);
    row.repeat = static_cast<int>(f.column_int(2));
    row.status = f.column_text(3);
    row.attempts = static_cast<int>(f.column_int(4));
    row.error = f.column_text(5);
    row.exit_code = opt_int(f, 6);
    row.term_signal = opt_int(f, 7);
    row.stderr_tail = f.column_text(8);
    d.failures.push_back(std::move(row));
  }

  for (const auto& r : d.runs) {
    if (!r.batch_auto) continue;
    ProbeCurve c = read_probe_curve(db, r);
    if (!c.probes.empty()) d.probe_curves.push_back(std::move(c));
  }
  for (const auto& config : d.ranking.rows) {
    if (d.trends.size() >= kMaxTrendSeries) break;
    TrendSeries t = read_trend(db, d.sweep, config);
    if (t.points.size() >= 2) d.trends.push_back(std::move(t));
  }
  return d;
}

}  // namespace orch
