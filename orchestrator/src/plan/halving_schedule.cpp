// Successive halving's arithmetic (see halving_schedule.h).
#include "plan/halving_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "plan/config_hash.h"

namespace orch {
namespace {

std::size_t ceil_div(std::size_t n, std::size_t d) { return (n + d - 1) / d; }

// Entrants of each rung when every rung keeps ceil(n/eta): rungs until at most eta are left
// (the default), or `wanted` rungs, never more than bring the entrants down to one.
std::vector<std::size_t> entrants_per_rung(std::size_t n, std::size_t eta,
                                           std::optional<int> wanted) {
  std::vector<std::size_t> out{n};
  const auto enough = [&] {
    return wanted ? static_cast<int>(out.size()) >= *wanted : out.back() <= eta;
  };
  while (!enough() && out.back() > 1) out.push_back(ceil_div(out.back(), eta));
  return out;
}

}  // namespace

std::int64_t HalvingSchedule::steps(int rung, std::int64_t measure) const {
  const int r = std::clamp(rung, 0, count() - 1);
  if (rungs[static_cast<std::size_t>(r)].last) return measure;
  // rung 0's steps such that eta^(rungs-1) times them is the full measurement
  std::int64_t scale = 1;
  for (int k = 0; k + 1 < count() && scale < measure; ++k) scale *= eta;
  std::int64_t s =
      min_steps ? *min_steps : std::max<std::int64_t>(kMinRungSteps, (measure + scale - 1) / scale);
  for (int k = 0; k < r && s < measure; ++k) s *= eta;
  return std::min(s, measure);
}

HalvingSchedule halving_schedule(const SearchSpec& search, std::size_t configurations,
                                 int repeats) {
  HalvingSchedule out;
  out.eta = search.eta;
  out.min_steps = search.min_steps;
  std::vector<std::size_t> entrants{configurations};
  if (search.halving()) {
    entrants =
        entrants_per_rung(configurations, static_cast<std::size_t>(search.eta), search.rungs);
    if (search.rungs && static_cast<int>(entrants.size()) < *search.rungs) {
      out.note = fmt::format(
          "search.rungs: {} rungs asked for, {} used: with eta {}, {} configuration{} come down "
          "to one after {} cut{}",
          *search.rungs, entrants.size(), search.eta, configurations,
          configurations == 1 ? "" : "s", entrants.size() - 1, entrants.size() == 2 ? "" : "s");
    }
  }
  for (std::size_t k = 0; k < entrants.size(); ++k) {
    Rung r;
    r.index = static_cast<int>(k);
    r.entrants = entrants[k];
    r.last = k + 1 == entrants.size();
    r.keep = r.last ? r.entrants : entrants[k + 1];
    r.repeats = r.last ? repeats : std::min(search.rung_repeat, std::max(1, repeats));
    out.rungs.push_back(r);
  }
  return out;
}

HalvingSchedule halving_schedule(const Plan& plan) {
  std::map<std::string, int> repeats;
  for (const RunSpec& run : plan.runs)
    repeats[run.hash] = std::max(repeats[run.hash], run.repeat + 1);
  int most = 1;
  for (const auto& [hash, n] : repeats) most = std::max(most, n);
  return halving_schedule(plan.search, repeats.size(), most);
}

nlohmann::json schedule_json(const SearchSpec& search, const HalvingSchedule& schedule) {
  if (!search.halving()) return nullptr;
  nlohmann::json rungs = nlohmann::json::array();
  for (const Rung& r : schedule.rungs)
    rungs.push_back({{"entrants", r.entrants}, {"keep", r.keep}, {"repeats", r.repeats}});
  nlohmann::json out = {{"method", "halving"},
                        {"eta", search.eta},
                        {"rungs", schedule.count()},
                        {"rung_repeat", search.rung_repeat},
                        {"schedule", rungs}};
  if (search.min_steps) out["min_steps"] = *search.min_steps;
  return out;
}

std::string rung_hash(const std::string& hash, int rung, std::int64_t steps) {
  return config_hash({{"configuration", hash}, {"rung", rung}, {"measured_steps", steps}});
}

RunSpec rung_run(const RunSpec& full, const HalvingSchedule& schedule, int rung, int repeat) {
  RunSpec run = full;
  run.repeat = repeat;
  const Rung& r = schedule.rungs.at(static_cast<std::size_t>(rung));
  if (r.last) return run;
  const std::int64_t steps = schedule.steps(rung, full.measure_steps);
  run.measure_steps = steps;
  nlohmann::json config = full.config.json();
  config["steps"]["measure"] = steps;
  config["repeat"] = r.repeats;
  // A profile is read beside the full measurement; a rung's run only has to be timed.
  if (config.contains("profile")) config["profile"]["steps"] = 0;
  run.profile.steps = 0;
  config["search"] = {{"method", "halving"}, {"rung", rung}, {"configuration", full.hash}};
  run.config = config;
  run.hash = rung_hash(full.hash, rung, steps);
  return run;
}

}  // namespace orch
