// Matrix combinations that resolve to one configuration. A script run has no model, precision,
// ... and a built-in run no args (workload_config.h), so combinations that differ only there
// are one configuration: said under the plan's table, or refused when an axis value thereby
// reaches no configuration that reads it.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/experiment_schema.h"
#include "plan/matrix.h"
#include "plan/plan_error.h"
#include "plan/run_spec.h"

namespace orch {

/// The combinations behind a plan's configurations: kept[i] made configuration i, and
/// merged[i] holds the later combinations that resolved to the same configuration.
struct ConfigurationCombos {
  std::vector<const MatrixCombination*> kept;
  std::vector<std::vector<const MatrixCombination*>> merged;
};

/// A combination as written, for messages: "(precision=amp, batch_size=64)".
std::string describe_combo(const MatrixCombination& c);

/// Adds to `problems` each axis value of `spec` that no configuration uses: every combination
/// with it merged into another, whose workload ignores the axis' key. `configs[i]` is
/// configuration i's resolved values (at least at the axes' keys); `paths` holds each axis'
/// SettingPath.
void check_lost_axes(const MatrixSpec& spec, const std::map<std::string, SettingPath>& paths,
                     const ConfigurationCombos& combos, const std::vector<nlohmann::json>& configs,
                     PlanErrorList& problems);

/// Adds to `plan.notes` which configurations (named `names`) stand for which of the plan's
/// `combinations` combinations; nothing when none merged.
void note_merges(std::size_t combinations, const ConfigurationCombos& combos,
                 const std::vector<std::string>& names, Plan& plan);

}  // namespace orch
