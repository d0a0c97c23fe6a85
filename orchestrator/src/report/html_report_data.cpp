// Reading one sweep's report data from the store.
#include "report/html_report_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>

#include "report/metric_catalog.h"
#include "report/shown_runs.h"
#include "result/core_metrics.h"

namespace orch {
namespace {

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

RunTimeline read_timeline(const storage::Store& store, const storage::RunRecord& r) {
  storage::RunTelemetry samples = store.run_telemetry(r.id);
  RunTimeline t;
  t.run_id = r.id;
  t.name = r.name;
  t.status = r.status;
  t.repeat = r.repeat;
  t.window = samples.window;
  t.reason = std::move(samples.reason);
  t.t_s = std::move(samples.t_s);
  t.gpu_util_pct = std::move(samples.gpu_util_pct);
  t.power_w = std::move(samples.power_w);
  t.memory_used_bytes = std::move(samples.memory_used_bytes);
  t.host_window = samples.host_window;
  t.host_t_s = std::move(samples.host_t_s);
  t.host_cpu_pct = std::move(samples.host_cpu_pct);
  t.host_core_pct = std::move(samples.host_core_pct);
  if (t.t_s.empty() && t.reason.empty()) {
    t.reason =
        r.status == "ok" ? "no telemetry samples were recorded" : "the run recorded no telemetry";
  }
  return t;
}

ProbeCurve read_probe_curve(const storage::Store& store, const storage::RunRecord& r) {
  storage::BatchSearchRecord search = store.batch_search(r.id);
  ProbeCurve c;
  c.name = r.name;
  c.repeat = r.repeat;
  c.mode = std::move(search.mode);
  c.chosen = search.chosen;
  c.search_s = search.search_s;
  c.headroom = search.headroom;
  c.probes = std::move(search.probes);
  return c;
}

// The configuration's ok runs in every sweep created up to `sweep` (this one included),
// grouped by sweep, in creation order.
TrendSeries read_trend(const storage::Store& store, const storage::SweepInfo& sweep,
                       const RankedConfig& config) {
  TrendSeries t;
  t.name = config.name;
  t.config_hash = config.config_hash;
  std::int64_t current = -1;
  std::vector<double> values;
  auto flush = [&] {
    if (!values.empty()) t.points.back().stats = analysis::summarize(values);
    values.clear();
  };
  for (const storage::ConfigRun& run : store.config_history(config.config_hash, sweep)) {
    if (run.sweep_id != current) {
      flush();
      current = run.sweep_id;
      TrendPoint p;
      p.sweep = run.sweep;
      p.created_at = run.sweep_created_at;
      p.driver_version = run.driver_version;
      p.cudnn_version = run.cudnn_version;
      t.points.push_back(std::move(p));
    }
    values.push_back(run.images_per_s);
  }
  flush();
  return t;
}

// Run timelines in ranking order (then name and repeat), runs of unranked configurations after.
std::vector<RunTimeline> ranked_timelines(const storage::Store& store, const ReportData& d) {
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
  std::vector<RunTimeline> out;
  for (const auto* r : order) out.push_back(read_timeline(store, *r));
  return out;
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
  d.ranking = rank_runs(d.runs, require_metric(metric_key::kImagesPerS), 0, Diverged::leave_out,
                        shown.baseline);
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

  d.timelines = ranked_timelines(store, d);
  d.environments = store.run_environments(sweep.id);
  d.failures = store.failures(sweep.name);
  for (const auto& r : d.runs) {
    if (!r.batch_auto) continue;
    ProbeCurve c = read_probe_curve(store, r);
    if (!c.probes.empty()) d.probe_curves.push_back(std::move(c));
  }
  for (const auto& config : d.ranking.rows) {
    if (d.trends.size() >= kMaxTrendSeries) break;
    TrendSeries t = read_trend(store, d.sweep, config);
    if (t.points.size() >= 2) d.trends.push_back(std::move(t));
  }
  return d;
}

}  // namespace orch
