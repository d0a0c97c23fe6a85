// Console ranking table. Speed-up is relative to the slowest configuration shown, the way the
// article reports "before -> after".
#include "report/rank_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace orch {

std::string format_ranking(const std::vector<storage::RankRow>& rows) {
  if (rows.empty()) return "no successful runs recorded\n";
  std::set<std::string> experiments;
  std::size_t name_w = 13;
  double slowest = rows.front().images_per_s;
  for (const auto& r : rows) {
    experiments.insert(r.experiment);
    name_w = std::max(name_w, r.name.size() + (experiments.size() > 1 ? 0 : 0));
    slowest = std::min(slowest, r.images_per_s);
  }
  const bool show_exp = experiments.size() > 1;
  std::size_t exp_w = 10;
  for (const auto& e : experiments) exp_w = std::max(exp_w, e.size());

  std::string out;
  if (show_exp) out += fmt::format("{:<{}}  ", "experiment", exp_w);
  out += fmt::format("{:>4}  {:<{}}  {:>10}  {:>21}  {:>4}  {:>9}  {:>7}  {:>5}  {}\n", "rank",
                     "configuration", name_w, "img/s", "min..max", "runs", "step ms", "speedup",
                     "batch", "device");
  int rank = 1;
  for (const auto& r : rows) {
    if (show_exp) out += fmt::format("{:<{}}  ", r.experiment, exp_w);
    const std::string range = fmt::format("{:.1f}..{:.1f}", r.images_per_s_min, r.images_per_s_max);
    out += fmt::format("{:>4}  {:<{}}  {:>10.1f}  {:>21}  {:>4}  {:>9.2f}  {:>6.2f}x  {:>5}  {}\n",
                       rank++, r.name, name_w, r.images_per_s, range, r.runs, r.step_ms_mean,
                       slowest > 0 ? r.images_per_s / slowest : 0.0, r.batch_size, r.device);
  }
  return out;
}

}  // namespace orch
