#include "sweep/time_shares.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "result/run_phases.h"
#include "sweep/progress.h"

namespace orch::sweep {

std::vector<std::pair<std::string, double>> time_shares(const SweepTime& t) {
  std::vector<std::pair<std::string, double>> out;
  for (const PhaseShare& s :
       phase_shares(t.phases, t.unmeasured_s, t.wall_s * std::max(t.slots, 1))) {
    out.emplace_back(s.label, s.share);
  }
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
