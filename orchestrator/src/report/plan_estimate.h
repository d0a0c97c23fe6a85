// How long a plan will take, said before it runs: each configuration's runs at what this
// database's history says such a run took (its own earlier runs, else runs of the same model
// and batch, else the database's median run), or at a stated default; and a warning when the
// whole exceeds a night, so a 6,000-run matrix is not accepted without a word.
#pragma once

#include <cstddef>
#include <string>

#include "plan/run_spec.h"
#include "storage/store.h"

namespace orch {

/// A run's duration when the database has nothing to go by: set-up, warm-up and the default
/// 50 measured steps of a ResNet-50 on a GPU take well under a minute; on a CPU, longer.
constexpr double kDefaultRunSeconds = 60;
/// Above this, `orch plan` warns: a sweep started in the evening should end by morning.
constexpr double kLongPlanSeconds = 12 * 3600.0;

struct PlanEstimate {
  std::size_t runs = 0;
  double seconds = 0;
  /// Configurations by where their per-run time came from.
  std::size_t own = 0, similar = 0, median = 0, fallback = 0;
  double median_s = 0;  ///< the database's median run, when any configuration used it
};

/// The estimate for `plan`, from the finished runs of `store` (none: every run at
/// kDefaultRunSeconds). Each run counts whole: wall time from its start to its record, set-up
/// included, as runs.duration_s holds it.
PlanEstimate estimate_plan(const Plan& plan, const storage::Store* store);

/// "estimate: 12 runs, about 25 min (4 configurations from their own runs in DB, ...)" and,
/// above kLongPlanSeconds, a second line starting "warning:". `db` names the database.
std::string format_plan_estimate(const PlanEstimate& e, const std::string& db);

/// "45 s", "12 min", "3.5 h", "4 days".
std::string duration_text(double seconds);

}  // namespace orch
