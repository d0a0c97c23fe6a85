// A halving sweep's standing (see halving_status.h).
#include "report/halving_status.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "result/core_metrics.h"
#include "text/terminal_text.h"

namespace orch {
namespace {

// The configuration a run measures: its own hash for a full measurement, the one its
// `search` names for a rung's.
std::string configuration_of(const storage::RunRecord& r) {
  const auto it = r.config.find("search");
  if (it != r.config.end() && it->is_object() && it->contains("configuration"))
    return it->value("configuration", r.config_hash);
  return r.config_hash;
}

std::int64_t steps_of(const storage::RunRecord& r) {
  const auto it = r.config.find("steps");
  if (it == r.config.end() || !it->is_object()) return 0;
  const auto m = it->find("measure");
  return m != it->end() && m->is_number_integer() ? m->get<std::int64_t>() : 0;
}

void count_run(RungStatus& rung, std::map<int, std::set<std::string>>& seen,
               std::map<int, std::set<std::string>>& failed, const storage::RunRecord& r, int k) {
  const std::string config = configuration_of(r);
  const bool ok = r.status == "ok" || r.status == "pruned";
  (ok ? seen : failed)[k].insert(config);
  const std::int64_t steps = steps_of(r);
  if (steps > 0) {
    rung.steps_min = rung.steps_min == 0 ? steps : std::min(rung.steps_min, steps);
    rung.steps_max = std::max(rung.steps_max, steps);
  }
}

std::vector<PrunedConfig> pruned_configs(const ShownRuns& shown) {
  std::map<std::pair<int, std::string>, PrunedConfig> by;
  for (const auto& r : shown.rung_runs) {
    if (r.status != "pruned" || !r.rung) continue;
    PrunedConfig& p = by[{*r.rung, configuration_of(r)}];
    p.name = r.name;
    p.config_hash = configuration_of(r);
    p.rung = *r.rung;
    p.steps = steps_of(r);
    if (const auto v = r.metric(metric_key::kImagesPerS)) {
      p.images_per_s += (*v - p.images_per_s) / (p.runs + 1);  // running mean
      ++p.runs;
    }
  }
  std::vector<PrunedConfig> out;
  for (auto& [key, p] : by) out.push_back(std::move(p));
  std::stable_sort(out.begin(), out.end(), [](const PrunedConfig& a, const PrunedConfig& b) {
    return a.rung != b.rung ? a.rung > b.rung : a.images_per_s > b.images_per_s;
  });
  return out;
}

}  // namespace

HalvingStatus halving_status(const ShownRuns& shown) {
  HalvingStatus out;
  if (!shown.search.is_object()) return out;
  out.halving = true;
  out.eta = shown.search.value("eta", 0);
  const nlohmann::json schedule = shown.search.value("schedule", nlohmann::json::array());
  for (std::size_t k = 0; k < schedule.size(); ++k) {
    RungStatus r;
    r.index = static_cast<int>(k);
    r.last = k + 1 == schedule.size();
    r.planned = schedule[k].value("entrants", std::size_t{0});
    r.repeats = schedule[k].value("repeats", 1);
    out.rungs.push_back(r);
  }
  if (out.rungs.empty()) return out;
  std::map<int, std::set<std::string>> seen, failed;
  for (const auto& r : shown.rung_runs) {
    if (!r.rung || *r.rung < 0 || *r.rung >= static_cast<int>(out.rungs.size())) continue;
    count_run(out.rungs[static_cast<std::size_t>(*r.rung)], seen, failed, r, *r.rung);
  }
  const int last = static_cast<int>(out.rungs.size()) - 1;
  for (const auto& r : shown.runs) {
    // A full measurement is the last rung's; a failed rung run carries its rung.
    const int k = r.rung.value_or(last);
    if (k < 0 || k > last || r.status == "running" || r.status == "interrupted") continue;
    count_run(out.rungs[static_cast<std::size_t>(k)], seen, failed, r, k);
  }
  out.pruned = pruned_configs(shown);
  for (RungStatus& r : out.rungs) {
    for (const auto& f : failed[r.index]) seen[r.index].erase(f);  // a failed repeat fails it
    r.measured = seen[r.index].size();
    r.failed = failed[r.index].size();
    r.pruned = static_cast<std::size_t>(
        std::count_if(out.pruned.begin(), out.pruned.end(),
                      [&](const PrunedConfig& p) { return p.rung == r.index; }));
    if (r.measured + r.failed > 0) out.reached = r.index;
  }
  return out;
}

std::string format_halving(const HalvingStatus& status) {
  if (!status.halving || status.rungs.empty()) return "";
  std::string out = fmt::format("successive halving (eta {}), keeping the best 1/{} at each cut:\n",
                                status.eta, status.eta);
  for (const RungStatus& r : status.rungs) {
    const std::string steps = r.steps_max == 0 ? std::string("?")
                              : r.steps_min == r.steps_max
                                  ? std::to_string(r.steps_max)
                                  : fmt::format("{}-{}", r.steps_min, r.steps_max);
    std::string line = fmt::format("  rung {}{}: ", r.index, r.last ? " (full)" : "");
    if (r.measured + r.failed == 0) {
      line += fmt::format("not reached ({} configurations planned)", r.planned);
    } else {
      line += fmt::format("{} configurations measured over {} steps x {} repeat{}", r.measured,
                          steps, r.repeats, r.repeats == 1 ? "" : "s");
      if (r.failed) line += fmt::format(", {} failed", r.failed);
      if (!r.last) line += fmt::format(", {} pruned", r.pruned);
      if (r.last) line += ": ranked above";
    }
    out += line + "\n";
  }
  const int last = static_cast<int>(status.rungs.size()) - 1;
  if (status.reached < last) {
    out += fmt::format(
        "the sweep has reached rung {} so far; the ranking comes from rung {}, the full "
        "measurement: run the same `orch sweep` command again to go on\n",
        std::max(status.reached, 0), last);
  }
  if (status.pruned.empty()) return out;
  out += "pruned (a shorter measurement, not comparable with the ranking above):\n";
  std::size_t width = 0;
  for (const auto& p : status.pruned) width = std::max(width, terminal_text(p.name).size());
  for (const auto& p : status.pruned) {
    out += fmt::format("  {:<{}}  pruned at rung {}: {:.1f} img/s over {} steps{}\n",
                       terminal_text(p.name), width, p.rung, p.images_per_s, p.steps,
                       p.runs > 1 ? fmt::format(" (mean of {} runs)", p.runs) : "");
  }
  return out;
}

}  // namespace orch
