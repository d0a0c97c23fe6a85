// `orch plan`'s account of a `search: halving` plan: its rungs, how many configurations each
// measures and keeps, with how many steps and repeats, and its runs and measured steps beside
// the grid's.
#pragma once

#include <string>

#include "plan/run_spec.h"

namespace orch {

/// The schedule's lines; empty for a grid plan.
std::string format_halving_schedule(const Plan& plan);

}  // namespace orch
