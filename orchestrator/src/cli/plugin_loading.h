// Loads the plugin registry for a command and reports refused libraries on stderr.
#pragma once

#include "cli/commands.h"
#include "plugin_host/registry.h"

namespace orch::cli {

/// Loads every plugin on the search path, each new or changed library vetted in a child process
/// first (ORCH_PLUGIN_PROBE_TIMEOUT, ORCH_PLUGIN_PROBE_CACHE). Refused libraries are printed as
/// warnings (they never stop a command by themselves: a plan that needs one fails as "unknown
/// plugin").
void load_registry(PluginRegistry& registry, const GlobalOptions& g, bool warn = true);

}  // namespace orch::cli
