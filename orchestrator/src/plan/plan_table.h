// The table `orch plan` prints: one row per run, then a summary line.
#pragma once

#include <string>

#include "plan/run_spec.h"

namespace orch {

/// Columns: # (0-based index into plan.runs), name, hash (first 12 hex digits), one column
/// per axis in plan.axes, repeat (0-based). Then "N runs (C configurations x R repeats)".
std::string format_plan_table(const Plan& plan);

}  // namespace orch
