#include "sweep/time_shares.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sweep/progress.h"

namespace orch::sweep {

std::vector<std::pair<std::string, double>> time_shares(const SweepTime& t) {
  const double total = t.wall_s * std::max(t.slots, 1);
  if (total <= 0) return {};
  const RunPhases& p = t.phases;
  std::vector<std::pair<std::string, double>> named = {
      {"warm-up", p.warmup_s},        {"start-up", p.startup_s}, {"set-up", p.setup_s},
      {"after the steps", p.after_s}, {"exit", p.teardown_s},    {"batch search", p.batch_search_s},
      {"failed runs", t.unmeasured_s}};
  std::stable_sort(named.begin(), named.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  double accounted = p.measure_s;
  std::vector<std::pair<std::string, double>> out{{"measured", p.measure_s / total}};
  for (const auto& [label, seconds] : named) {
    accounted += seconds;
    out.emplace_back(label, seconds / total);
  }
  out.emplace_back("between runs", std::max(0.0, total - accounted) / total);
  return out;
}

std::string time_shares_line(const SweepTime& t) {
  if (t.runs == 0 && t.unmeasured_s <= 0) return {};
  const auto shares = time_shares(t);
  if (shares.empty()) return {};
  const int slots = std::max(t.slots, 1);
  const std::string where =
      t.cpu ? "the CPU" : fmt::format("{} {}", slots, slots == 1 ? "GPU" : "GPUs");
  std::string line = fmt::format("measured {:.0f}% of the sweep's wall time ({} on {})",
                                 100 * shares.front().second, format_duration(t.wall_s), where);
  std::string rest;
  for (std::size_t i = 1; i < shares.size(); ++i) {
    if (shares[i].second < 0.005) continue;
    rest += fmt::format("{}{} {:.0f}%", rest.empty() ? "" : ", ", shares[i].first,
                        100 * shares[i].second);
  }
  return rest.empty() ? line : line + "; " + rest;
}

}  // namespace orch::sweep
