// Aggregation and ordering for `orch rank`.
#include "report/ranking.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "result/core_metrics.h"

namespace orch {
namespace {

std::optional<double> mean_of(const std::vector<const storage::RunRecord*>& runs,
                              const std::string& metric) {
  double sum = 0;
  int n = 0;
  for (const auto* r : runs) {
    if (auto v = r->metric(metric)) {
      sum += *v;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

// Means over the profiled runs of the group only: a configuration is profiled in all its runs
// or in none (profile.steps is part of its hash), but a run whose profiler failed has no numbers.
void profile_means(const std::vector<const storage::RunRecord*>& runs, RankedConfig& c) {
  double kernels = 0, busy = 0;
  int n_kernels = 0, n_busy = 0;
  for (const auto* r : runs) {
    if (!r->profile) continue;
    if (r->profile->kernels_per_step) kernels += *r->profile->kernels_per_step, ++n_kernels;
    if (r->profile->gpu_busy_share) busy += 100 * *r->profile->gpu_busy_share, ++n_busy;
  }
  if (n_kernels > 0) c.kernels_per_step = kernels / n_kernels;
  if (n_busy > 0) c.trace_busy_pct = busy / n_busy;
}

std::string most_frequent_diagnosis(const std::vector<const storage::RunRecord*>& runs) {
  std::map<std::string, int> counts;
  for (const auto* r : runs) {
    if (!r->diagnosis.empty()) ++counts[r->diagnosis];
  }
  std::string best;
  int best_n = 0;
  for (const auto& [label, n] : counts) {
    if (n > best_n) best = label, best_n = n;
  }
  return best;
}

using RunGroups = std::map<std::string, std::vector<const storage::RunRecord*>>;

// The runs that count, by configuration hash. Every diverged run is listed in `out`, ranked or
// not, so that none disappears silently; configurations with runs but none that count are
// counted as unranked.
RunGroups group_ranked_runs(const std::vector<storage::RunRecord>& runs, const std::string& metric,
                            Diverged diverged, Ranking& out) {
  RunGroups by_config;
  std::set<std::string> all_configs;
  for (const auto& r : runs) {
    all_configs.insert(r.config_hash);
    const bool is_diverged = r.status == "diverged";
    const bool ranked = (r.status == "ok" || (is_diverged && diverged == Diverged::include)) &&
                        r.metric(metric).has_value();
    if (is_diverged) {
      out.diverged.push_back({r.name, r.config_hash, r.error, r.repeat, ranked});
      if (ranked) ++out.diverged_ranked;
    }
    if (ranked) {
      by_config[r.config_hash].push_back(&r);
      if (!is_diverged) ++out.ok_runs;
    }
  }
  std::sort(out.diverged.begin(), out.diverged.end(), [](const auto& a, const auto& b) {
    return std::tie(a.name, a.repeat, a.config_hash) < std::tie(b.name, b.repeat, b.config_hash);
  });
  out.unranked = all_configs.size() - by_config.size();
  return by_config;
}

// The batch sizes `batch_size: auto` chose, ascending, each once.
std::vector<std::int64_t> auto_batches(const std::vector<const storage::RunRecord*>& group) {
  std::vector<std::int64_t> batches;
  for (const auto* r : group)
    if (r->batch_auto && r->batch_size) batches.push_back(*r->batch_size);
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  return batches;
}

// One configuration's row, before it has a place: the metric's summary and the means of what
// the other columns show.
RankedConfig aggregate_config(const std::string& hash,
                              const std::vector<const storage::RunRecord*>& group,
                              const std::string& metric) {
  RankedConfig c;
  c.config_hash = hash;
  c.name = group.front()->name;
  std::vector<double> values;
  for (const auto* r : group) values.push_back(*r->metric(metric));
  c.stats = analysis::summarize(values);
  c.data_wait_ms = mean_of(group, metric_key::kDataWaitMsMean);
  if (auto step = mean_of(group, metric_key::kStepMsMean); step && c.data_wait_ms) {
    c.compute_ms = *step - *c.data_wait_ms;
  }
  c.peak_bytes = mean_of(group, metric_key::kPeakAllocatedBytes);
  c.gpu_util_pct = mean_of(group, metric_key::kGpuUtilMeanPct);
  c.power_w = mean_of(group, metric_key::kPowerMeanW);
  c.host_cpu_pct = mean_of(group, metric_key::kHostCpuUtilMeanPct);
  c.host_core_pct = mean_of(group, metric_key::kHostCpuBusiestCoreMeanPct);
  c.diagnosis = most_frequent_diagnosis(group);
  c.diverged_runs = static_cast<int>(std::count_if(
      group.begin(), group.end(), [](const auto* r) { return r->status == "diverged"; }));
  c.shared_gpu_runs = static_cast<int>(std::count_if(group.begin(), group.end(), [](const auto* r) {
    return r->metric(metric_key::kGpuOtherProcesses).value_or(0) > 0;
  }));
  c.auto_batches = auto_batches(group);
  profile_means(group, c);
  return c;
}

// Best mean first; equal means by name.
void sort_best_first(std::vector<RankedConfig>& rows, bool higher) {
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    if (a.stats.mean != b.stats.mean)
      return higher ? a.stats.mean > b.stats.mean : a.stats.mean < b.stats.mean;
    return a.name < b.name;
  });
}

// A noisy configuration's wide interval overlaps its neighbours' more easily; it sinks below
// every steady configuration it overlaps, so that the leader of a tie is one whose repeats
// agree. Each swap moves a steady row up past a noisy one, so this ends.
void sink_noisy_rows(std::vector<RankedConfig>& rows) {
  for (bool moved = true; moved;) {
    moved = false;
    for (std::size_t i = 0; i + 1 < rows.size(); ++i) {
      auto& x = rows[i];
      auto& y = rows[i + 1];
      if (x.noisy && !y.noisy && intervals_overlap(x.stats, y.stats)) {
        std::swap(x, y);
        moved = true;
      }
    }
  }
}

// What every speed-up is against: the experiment's `baseline:` when it has a row (marked as
// such), else the worst by its mean, which a noisy row moved down need not be.
double speedup_reference(Ranking& out, const std::string& baseline, bool higher) {
  double worst = out.rows.front().stats.mean;
  for (const auto& c : out.rows) {
    worst = higher ? std::min(worst, c.stats.mean) : std::max(worst, c.stats.mean);
  }
  for (auto& c : out.rows) {
    if (baseline.empty() || c.config_hash != baseline) continue;
    c.baseline = true;
    out.baseline = c.name;
    worst = c.stats.mean;
  }
  return worst;
}

// Positions, ties with the leader, and speed-ups over `reference`: for a lower-is-better
// metric, reference/this (2x = half the time).
void place_rows(std::vector<RankedConfig>& rows, double reference, bool higher) {
  const auto& leader = rows.front().stats;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto& c = rows[i];
    c.position = static_cast<int>(i + 1);
    c.tie = i > 0 && intervals_overlap(c.stats, leader);
    const double num = higher ? c.stats.mean : reference;
    const double den = higher ? reference : c.stats.mean;
    c.speedup = den > 0 ? num / den : std::nan("");
  }
}

}  // namespace

bool intervals_overlap(const analysis::Summary& a, const analysis::Summary& b) {
  return a.lower() <= b.upper() && b.lower() <= a.upper();
}

Ranking rank_runs(const std::vector<storage::RunRecord>& runs, const MetricInfo& metric,
                  std::size_t top, Diverged diverged, const std::string& baseline) {
  Ranking out;
  out.metric = metric;
  const RunGroups by_config = group_ranked_runs(runs, metric.name, diverged, out);
  for (const auto& [hash, group] : by_config)
    out.rows.push_back(aggregate_config(hash, group, metric.name));
  const bool higher = metric.better == Better::kHigher;
  sort_best_first(out.rows, higher);
  out.configurations = out.rows.size();
  if (out.rows.empty()) return out;
  for (auto& c : out.rows) c.noisy = analysis::is_noisy(c.stats);
  sink_noisy_rows(out.rows);
  const double reference = speedup_reference(out, baseline, higher);
  place_rows(out.rows, reference, higher);
  if (top > 0 && out.rows.size() > top) out.rows.resize(top);
  return out;
}

std::string noisy_note() {
  return fmt::format(
      "NOISY: the 95% interval reaches further than ±{:.0f}% of the mean, so the repeats disagree "
      "too much to rank it on; it never ranks above a steady configuration whose interval it "
      "overlaps (more repeats, or a quieter machine, narrow it)",
      100 * analysis::kNoisyShare);
}

std::string speedup_note(const Ranking& ranking) {
  if (!ranking.baseline.empty()) {
    return "speedup: against the baseline, " + ranking.baseline +
           " (`baseline:` in the experiment file)";
  }
  return "speedup: against the slowest configuration (`baseline: NAME` in the experiment file "
         "compares with one of your choice)";
}

std::string configuration_label(const RankedConfig& c) {
  if (c.auto_batches.empty()) return c.name;
  std::string chosen;
  for (const std::int64_t b : c.auto_batches)
    chosen += (chosen.empty() ? "" : ", ") + std::to_string(b);
  return c.name + " (chose " + chosen + ")";
}

std::string host_cpu_cell(const RankedConfig& c) {
  if (!c.host_cpu_pct) return "-";
  if (!c.host_core_pct) return fmt::format("{:.0f}%", *c.host_cpu_pct);
  return fmt::format("{:.0f}% / {:.0f}%", *c.host_cpu_pct, *c.host_core_pct);
}

std::string diagnosis_column(const RankedConfig& c) {
  std::vector<std::string> parts;
  const auto mark = [&](int runs, const char* what) {
    if (runs <= 0) return;
    parts.push_back(runs == c.stats.n ? std::string(what)
                                      : fmt::format("{} ({} of {} runs)", what, runs, c.stats.n));
  };
  mark(c.diverged_runs, "DIVERGED");
  mark(c.shared_gpu_runs, "SHARED GPU");
  // After the marks that may explain it: a shared GPU is often why the repeats disagree.
  if (c.noisy) {
    const auto share = analysis::relative_ci95(c.stats);
    parts.push_back(fmt::format("NOISY (±{:.0f}%)", 100 * share.value_or(0)));
  }
  if (!c.diagnosis.empty()) parts.push_back(c.diagnosis);
  if (parts.empty()) return "-";
  std::string out = parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i) out += "; " + parts[i];
  return out;
}

}  // namespace orch
