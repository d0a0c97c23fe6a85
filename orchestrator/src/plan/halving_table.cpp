// The halving schedule as `orch plan` prints it (see halving_table.h).
#include "plan/halving_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "plan/halving_schedule.h"

namespace orch {

std::string format_halving_schedule(const Plan& plan) {
  if (!plan.search.halving()) return "";
  const HalvingSchedule s = halving_schedule(plan);
  std::map<std::string, std::int64_t> measure;  // full measured steps, by configuration
  for (const RunSpec& r : plan.runs) measure[r.hash] = r.measure_steps;
  std::int64_t lo = 0, hi = 0;
  for (const auto& [hash, m] : measure) {
    lo = lo == 0 ? m : std::min(lo, m);
    hi = std::max(hi, m);
  }
  std::string out = fmt::format(
      "search: successive halving, eta {}: each rung keeps the best 1/{} by mean throughput "
      "(ties at the cut stay); the last rung is the full measurement\n",
      s.eta, s.eta);
  std::size_t runs = 0;
  std::int64_t steps = 0;  // measured steps over all runs, at the largest full measurement
  for (const Rung& r : s.rungs) {
    const std::int64_t a = s.steps(r.index, lo), b = s.steps(r.index, hi);
    out += fmt::format("  rung {}: {} configuration{} x {} measured steps x {} repeat{}{}\n",
                       r.index, r.entrants, r.entrants == 1 ? "" : "s",
                       a == b ? std::to_string(a) : fmt::format("{}-{}", a, b), r.repeats,
                       r.repeats == 1 ? "" : "s",
                       r.last ? " (the full measurement)" : fmt::format(", keep {}", r.keep));
    runs += r.entrants * static_cast<std::size_t>(r.repeats);
    steps += static_cast<std::int64_t>(r.entrants) * r.repeats * b;
  }
  const std::size_t grid_runs = plan.runs.size();
  const std::int64_t grid_steps = static_cast<std::int64_t>(grid_runs) * hi;
  out += fmt::format(
      "  {} runs and {} measured steps{} (the grid: {} runs, {} steps); a tie at a cut adds "
      "runs, and the estimate below is the grid's, an upper bound\n",
      runs, steps, lo == hi ? "" : " at most", grid_runs, grid_steps);
  return out;
}

}  // namespace orch
