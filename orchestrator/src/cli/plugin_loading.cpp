#include "cli/plugin_loading.h"

#include <cmath>
#include <cstdlib>
#include <iostream>

namespace orch::cli {
namespace {

// Where verdicts are remembered between commands: ORCH_PLUGIN_PROBE_CACHE (empty: nowhere),
// else the XDG cache folder. A machine without a home folder simply probes every time.
std::filesystem::path probe_cache_file() {
  if (const char* file = std::getenv("ORCH_PLUGIN_PROBE_CACHE")) return file;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') {
    return std::filesystem::path(xdg) / "orch" / "plugin-probes.tsv";
  }
  if (const char* home = std::getenv("HOME"); home && *home == '/') {
    return std::filesystem::path(home) / ".cache" / "orch" / "plugin-probes.tsv";
  }
  return {};
}

LoadProbeOptions probe_options() {
  LoadProbeOptions o;
  o.cache_file = probe_cache_file();
  if (const char* t = std::getenv("ORCH_PLUGIN_PROBE_TIMEOUT"); t && *t) {
    char* end = nullptr;
    const double s = std::strtod(t, &end);
    if (*end == '\0' && std::isfinite(s) && s > 0 && s <= 86'400) {
      o.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(s * 1000)));
    } else {
      std::cerr << "orch: warning: ORCH_PLUGIN_PROBE_TIMEOUT='" << t
                << "' is not a number of seconds in (0, 86400]; using " << o.timeout.count() / 1000
                << "\n";
    }
  }
  return o;
}

}  // namespace

void load_registry(PluginRegistry& registry, const GlobalOptions& g, bool warn) {
  registry.set_load_probe(probe_options());
  registry.load_directories(PluginRegistry::search_path(g.plugin_paths));
  if (!warn) return;
  for (const auto& r : registry.refused()) std::cerr << "orch: warning: " << r.reason << "\n";
}

}  // namespace orch::cli
