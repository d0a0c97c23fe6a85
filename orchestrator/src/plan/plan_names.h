// A plan's configuration names: the pieces each axis contributes (readable_name.h), and the
// include entries' `label:`s, which replace the generated name of the configuration they make.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "plan/config_draft.h"
#include "plan/matrix.h"
#include "plan/run_spec.h"

namespace orch {

/// Readable names for `configs` (drafts[i] made configs[i], the resolved configuration, of
/// which only the axes' keys are read) over the plan's axes: a plugin role
/// gives its plugin's name (alone) and each parameter any configuration sets explicitly
/// ("workers=14", a true flag as "fused_bn"); a group gives each of its fields ("impl=fused");
/// a scalar its value (alone when it explains itself: "channels_last", "b256").
/// `unset[i]` (when not empty) holds the axes configuration i did not set: the keys only
/// include entries add, for a configuration no such entry joined. They are left out of its
/// name, so an include's keys show in the names of the configurations it made, not in every
/// other name as their base value.
std::vector<std::string> plan_run_names(const std::vector<std::string>& axes,
                                        const std::map<std::string, SettingPath>& paths,
                                        const std::vector<Draft>& drafts,
                                        const std::vector<nlohmann::json>& configs,
                                        const std::vector<std::set<std::string>>& unset,
                                        const std::string& fallback);

/// Applies the include labels of `combinations` (combinations[i] made names[i]) to `names`.
/// Throws PlanError at the label when one entry's label would name several configurations,
/// when two labels fall on one configuration, or when a name is no longer unique.
void apply_labels(const std::vector<const MatrixCombination*>& combinations,
                  std::vector<std::string>& names);

}  // namespace orch
