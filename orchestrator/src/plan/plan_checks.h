// Plan-time checks of resolved configurations: what the experiment schema and the parameters'
// bounds cannot see one value at a time (a combination of settings, a GPU the configuration
// needs on this machine, a batch whose images cannot exist), found before anything runs.
//
// The host's own checks know only the experiment file's keys; a plugin states its own through
// PluginInfo::check (orch/plugin.h). Every problem of every configuration is reported together,
// each at the line and column of the setting that causes it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "orch/plugin.h"
#include "plan/config_draft.h"
#include "plan/run_spec.h"

namespace orch {

/// What the planner knows of the machine the runs will execute on. Absent (PlanOptions) when
/// they run elsewhere: then no check looks at this machine's GPUs or files.
struct MachineFacts {
  int visible_gpus = 0;
};

/// The largest input batch a configuration may ask for, in bytes (batch x channels x height x
/// width x 4-byte floats): 256 TiB, beyond any single device's memory and the 47-bit user
/// address space of x86-64 and AArch64 processes, so such a batch can never be allocated.
constexpr double kMaxBatchBytes = 281474976710656.0;  // 2^48

/// A resolved configuration (RunSpec::config) as PlanCheckInput::settings: roles by plugin
/// name and `role.param`, groups by `group.field`, scalars by name; `batch_size: auto` absent.
std::map<std::string, Value> configuration_settings(const nlohmann::json& config);

/// The host's own checks of one configuration (device and GPUs, the size of a batch).
std::vector<PlanProblem> host_plan_checks(const PlanCheckInput& in);

/// Every problem of one resolved configuration (`config`, which `draft` made), the host's and
/// its plugins', each as a PlanError at the place the draft wrote the setting it blames
/// (`fallback` when the setting is a default).
std::vector<PlanError> check_configuration(const Draft& draft, const nlohmann::json& config,
                                           const SchemaCatalog& catalog,
                                           const std::optional<MachineFacts>& machine,
                                           const SourceMark& fallback);

}  // namespace orch
