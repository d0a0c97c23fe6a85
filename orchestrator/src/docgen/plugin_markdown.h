// `orch plugins --markdown`: the parameter tables of docs/plugins.md, read from the schemas the
// plugins declare (PluginInfo, as the plugin host loaded them), the same declarations the
// planner validates experiment files against.
#pragma once

#include <string>
#include <vector>

#include "orch/plugin.h"

namespace orch::docgen {

/// One plugin: a line with its kind, version and description, then its parameters as a table
/// (parameter, type, default, allowed values or range, meaning), in declaration order.
std::string plugin_markdown(const PluginInfo& plugin);

/// Every plugin, models first, then data loaders, precisions and stream strategies, each kind
/// by name: a heading with its name and kind, then plugin_markdown().
std::string plugins_markdown(std::vector<PluginInfo> plugins);

}  // namespace orch::docgen
