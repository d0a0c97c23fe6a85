// Loads the plugin registry for a command and reports refused libraries on stderr.
#pragma once

#include "cli/commands.h"
#include "plugin_host/registry.h"

namespace orch::cli {

/// Loads every plugin on the search path, each new or changed library vetted in a child process
/// first (ORCH_PLUGIN_PROBE_TIMEOUT, ORCH_PLUGIN_PROBE_CACHE). Refused libraries are printed as
/// warnings (a plan that needs one fails as "unknown plugin"), except one that could not be
/// vetted because no child process could be started: that ends the command (exit 4) with the
/// reason, which "unknown plugin" would hide. An ORCH_PLUGIN_PATH entry that is missing or no
/// folder ends it too (exit 2), as such a --plugin-path does.
void load_registry(PluginRegistry& registry, const GlobalOptions& g, bool warn = true);

}  // namespace orch::cli
