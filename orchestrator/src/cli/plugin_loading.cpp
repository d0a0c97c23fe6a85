#include "cli/plugin_loading.h"

#include <iostream>

namespace orch::cli {

void load_registry(PluginRegistry& registry, const GlobalOptions& g, bool warn) {
  registry.load_directories(PluginRegistry::search_path(g.plugin_paths));
  if (!warn) return;
  for (const auto& r : registry.refused()) std::cerr << "orch: warning: " << r.reason << "\n";
}

}  // namespace orch::cli
