// A RunSpec as JSON and back: the form in which a run travels to the child process (and, later,
// to a cluster task). The resolved configuration is the single source of truth: every typed
// setting of a RunSpec is read back out of `config`, the same way the planner fills it.
#pragma once

#include <nlohmann/json.hpp>

#include "plan/run_spec.h"

namespace orch {

/// {experiment, run: {name, hash, repeat}, config, swept}: also the header of a result document.
nlohmann::json run_spec_json(const RunSpec& spec);

/// The inverse of run_spec_json. Throws std::invalid_argument naming the field that is missing
/// or has the wrong type.
RunSpec run_spec_from_json(const nlohmann::json& j);

/// Sets `run.config` to `config` and every typed field of `run` (plugin choices, batch size,
/// memory format, optimizer, steps, telemetry, profile, timeout, device, seed) from it. Throws
/// std::invalid_argument as run_spec_from_json does.
void set_run_config(RunSpec& run, const nlohmann::json& config);

}  // namespace orch
