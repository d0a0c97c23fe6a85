// One plan per sweep: before `orch sweep` runs anything, the file's plan is checked against the
// plan recorded for the sweep, so a changed file never runs beside the old configurations
// under the same sweep name (the ranking would list both, and compare could not choose).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/run_spec.h"
#include "storage/store.h"
#include "storage/sweep_plans.h"

namespace orch::sweep {

/// The revision `plan` would record: its configurations in plan order, each with its repeats
/// and `steps` group.
storage::SweepPlan sweep_plan_of(const Plan& plan);

struct PlanCheck {
  bool ok = true;       ///< false: stop with exit 2 and print `message`
  bool record = false;  ///< record `plan` as the sweep's next revision once it is opened
  std::string message;  ///< what differs and the two ways on, or what was recorded
};

/// Checks the sweep named `sweep_name` (it may not exist yet) against `plan`. No revision
/// recorded yet: record this one. The same configurations, repeats and steps as the latest
/// revision: nothing to do. Otherwise stop, unless `replan` (then record a new revision).
/// With `planned` (the plan `plan` was made from), a configuration that changed under its name
/// also names the settings that changed, read against a recorded run of its old configuration.
PlanCheck check_plan(const storage::Store& store, const std::string& sweep_name,
                     const storage::SweepPlan& plan, bool replan, const Plan* planned = nullptr);

/// "name: key old -> new, ..." for each configuration of `planned` whose name the stored
/// revision has under another hash, where a run of that old configuration is recorded in
/// `recorded` (its configuration is what the old hash stood for). At most a few lines.
std::vector<std::string> changed_settings(const storage::SweepPlan& stored, const Plan& planned,
                                          const std::vector<storage::RunRecord>& recorded);

}  // namespace orch::sweep
