// The experiment file's `search:` key: how a sweep goes through its configurations. `grid`
// (the default) measures every configuration in full; `halving` is successive halving
// (Jamieson & Talwalkar 2016; the rung rule of ASHA, Li et al. 2018): every configuration is
// measured briefly, the better 1/eta of them go on to a longer measurement, and so on until
// the last rung, which is the grid's full measurement of the survivors (plan/halving_schedule.h).
#pragma once

#include <cstdint>
#include <optional>

#include "plan/plan_error.h"
#include "plan/yaml_tree.h"

namespace orch {

/// eta when the file names none: the value Li et al. recommend (keep a third at each rung).
constexpr int kDefaultEta = 3;
/// The fewest measured steps of a rung when `min_steps` is not written: a step time needs a
/// few steps to mean something, whatever the arithmetic gives.
constexpr std::int64_t kMinRungSteps = 5;

struct SearchSpec {
  enum class Method { grid, halving };
  Method method = Method::grid;
  int eta = kDefaultEta;                  ///< keep the best 1/eta of a rung's configurations
  std::optional<int> rungs;               ///< as written; none: halving_schedule decides
  std::optional<std::int64_t> min_steps;  ///< rung 0's measured steps as written; none: derived
  int rung_repeat = 1;                    ///< repeats of a configuration in a rung before the last
  SourceMark mark;                        ///< where `search:` was written

  bool halving() const { return method == Method::halving; }
};

/// The `search:` mapping of an experiment file. Throws PlanError(s) at the line and column of
/// each bad entry: an unknown key or method, eta < 2, rungs < 1, min_steps < 1, a halving key
/// under `method: grid`.
SearchSpec parse_search(const YNode& node);

}  // namespace orch
