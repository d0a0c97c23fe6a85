// Command-line overrides, Hydra-like: `batch_size=512`, `precision.dtype=bf16`,
// `precision={plugin: amp}`, `memory_format=[contiguous, channels_last]`.
//
// The key is a setting path (as for matrix axes); the value is parsed as YAML. The planner
// applies an override to base; when the key is a matrix axis it pins the axis to the value
// (a list replaces the axis' values); when the key lies under a matrix path (`data.image_size`
// with a `data` axis) it is applied after the matrix values, which would otherwise replace it.
// Messages point into the override as `<override>:1:col`.
#pragma once

#include <string>

#include "plan/experiment_schema.h"
#include "plan/yaml_tree.h"

namespace orch {

/// The file name overrides report errors under.
inline constexpr const char* kOverrideFile = "<override>";

struct Override {
  std::string text;  ///< as given
  SettingPath path;
  YNode value;
};

/// Splits and parses one `key=value`. Throws PlanError.
Override parse_override(const std::string& text);

}  // namespace orch
