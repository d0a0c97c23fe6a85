// A resolved configuration (or a result document's environment) as flat "a.b.c" keys: export's
// columns, compare's and the environment diff's rows, MLflow's params, and the settings a
// changed plan names. It needs JSON alone, so it sits beside the result document, where the
// report and the sweep reach it without the planner.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace orch {

/// Flattens nested objects into "a.b.c" keys; arrays stay JSON text. A plugin choice's
/// `params` are lifted: {precision: {plugin: amp, params: {dtype: bf16}}} gives
/// precision.plugin and precision.dtype.
void flatten_json(const nlohmann::json& value, const std::string& prefix,
                  std::map<std::string, nlohmann::json>& out);

}  // namespace orch
