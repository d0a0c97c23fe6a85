#include "cli/plugin_loading.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/command_failure.h"
#include "plugin_host/load_probe.h"

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

// ORCH_PLUGIN_PATH's entries are folders the user named, as --plugin-path's are: a mistyped
// one would only lose its plugins, without a word.
void check_env_plugin_path() {
  const char* env = std::getenv("ORCH_PLUGIN_PATH");
  if (env == nullptr) return;
  std::stringstream entries(env);
  std::string dir;
  while (std::getline(entries, dir, ':')) {
    if (dir.empty()) continue;
    std::error_code ec;
    const auto type = std::filesystem::status(dir, ec).type();
    std::string what;
    if (type == std::filesystem::file_type::not_found) {
      what = "does not exist";
    } else if (ec || type == std::filesystem::file_type::directory) {
      continue;  // a folder, or one that cannot be read (a link loop): the registry says why
    } else {
      what = "is not a folder";
    }
    throw bad_input("orch: ORCH_PLUGIN_PATH: " + dir + " " + what +
                    " (ORCH_PLUGIN_PATH is a colon-separated list of folders of plugin "
                    "libraries)");
  }
}

// A library that could not be vetted because no child process could be started: every other
// child this command needs (a run, a rehearsal) would fail the same way, and "no precision
// plugin named fp32" would hide why.
void refuse_unvetted(const PluginRegistry& registry) {
  for (const auto& r : registry.refused()) {
    if (r.reason.find(kNotVettedText) == std::string::npos) continue;
    throw CommandFailure(kExitEnvironment,
                         "orch: " + r.reason +
                             "; orch cannot run without its plugins: raise the limit or end "
                             "other processes, then run the same command again");
  }
}

}  // namespace

void load_registry(PluginRegistry& registry, const GlobalOptions& g, bool warn) {
  check_env_plugin_path();
  registry.set_load_probe(probe_options());
  registry.load_directories(PluginRegistry::search_path(g.plugin_paths));
  refuse_unvetted(registry);
  if (!warn) return;
  for (const auto& r : registry.refused()) std::cerr << "orch: warning: " << r.reason << "\n";
}

}  // namespace orch::cli
