// The arithmetic of successive halving (plan/search_spec.h): how many rungs, how many
// configurations enter each, how many go on, and the run specification of a configuration in
// a rung. Pure functions of the plan, so `orch plan`, `orch sweep` and a resumed sweep agree.
//
// With N configurations and eta: rung 0 measures all N; each rung keeps the best ceil(n/eta)
// of its n entrants (ties keep more: sweep/halving.h), which enter the next rung. By default
// the rungs go on until at most eta configurations are left, and those get the last rung: the
// file's full measurement (steps.measure, `repeat` repeats), the very runs a grid would make.
// A rung k before the last measures min(min_steps x eta^k, steps.measure) steps, `rung_repeat`
// times; min_steps defaults to steps.measure / eta^(rungs-1), and to at least kMinRungSteps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/run_spec.h"
#include "plan/search_spec.h"

namespace orch {

struct Rung {
  int index = 0;
  std::size_t entrants = 0;  ///< configurations it measures (at least; a tie at a cut adds)
  std::size_t keep = 0;      ///< of them, the best that enter the next rung; the last: entrants
  int repeats = 1;           ///< runs of each configuration
  bool last = false;         ///< the full measurement
};

struct HalvingSchedule {
  int eta = kDefaultEta;
  std::vector<Rung> rungs;                ///< one for grid
  std::optional<std::int64_t> min_steps;  ///< as written
  /// Why the schedule is not what the file says (more rungs than configurations need).
  std::string note;

  /// Measured steps of a configuration whose full measurement is `measure` steps, in `rung`.
  std::int64_t steps(int rung, std::int64_t measure) const;
  int count() const { return static_cast<int>(rungs.size()); }
};

/// The schedule for `configurations` configurations measured `repeats` times in full. Grid:
/// one rung, everything in full.
HalvingSchedule halving_schedule(const SearchSpec& search, std::size_t configurations, int repeats);

/// The schedule of a plan (its search and its configurations).
HalvingSchedule halving_schedule(const Plan& plan);

/// The run `repeat` of configuration `full` (a run of the plan) in `rung`. The last rung's is
/// `full` itself (at that repeat). An earlier rung's measures fewer steps, has a hash of its
/// own (from the configuration's, the rung and its steps, so a resumed sweep finds it again)
/// and says so in its configuration: `search: {method: halving, rung, configuration}`.
/// Profiling is left to the last rung.
RunSpec rung_run(const RunSpec& full, const HalvingSchedule& schedule, int rung, int repeat);

/// What a plan revision records of the search (storage::SweepPlan::search): null for the grid,
/// else {"method": "halving", "eta", "rungs", "rung_repeat", "min_steps" (when written),
/// "schedule": [{"entrants", "keep", "repeats"}, ...]}.
nlohmann::json schedule_json(const SearchSpec& search, const HalvingSchedule& schedule);

/// The hash of configuration `hash` measured `steps` steps in rung `rung` (not the last).
std::string rung_hash(const std::string& hash, int rung, std::int64_t steps);

}  // namespace orch
