// `orch plugins`: every plugin found, with kind, version, file and parameters.
#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "cli/command_failure.h"
#include "cli/commands.h"
#include "cli/plugin_loading.h"

namespace orch::cli {
namespace {

std::string describe(const ParamSpec& p) {
  std::string s = fmt::format("      {} ({}, default {})", p.name, to_string(p.type),
                              to_string(p.default_value));
  if (!p.allowed.empty()) {
    std::string allowed;
    for (const auto& v : p.allowed) allowed += (allowed.empty() ? "" : ", ") + to_string(v);
    s += " one of: " + allowed;
  }
  if (p.min || p.max) {
    s += fmt::format(" range: {}..{}", p.min ? fmt::format("{}", *p.min) : "",
                     p.max ? fmt::format("{}", *p.max) : "");
  }
  if (!p.doc.empty()) s += " - " + p.doc;
  return s;
}

// No options of its own: what it lists is the search path (--plugin-path, ORCH_PLUGIN_PATH).
int run_plugins(const GlobalOptions& g) {
  PluginRegistry registry;
  load_registry(registry, g, /*warn=*/false);
  for (PluginKind kind : {PluginKind::kModel, PluginKind::kDataLoader, PluginKind::kPrecision,
                          PluginKind::kStreamStrategy}) {
    for (const auto& lib : registry.plugins()) {
      const auto& i = lib.info;
      if (i.kind != kind) continue;
      std::cout << fmt::format("{:<9} {:<12} {:<7} {}\n", to_string(i.kind), i.name, i.version,
                               i.description);
      std::cout << "      file: " << lib.path.string() << "\n";
      for (const auto& p : i.params) std::cout << describe(p) << "\n";
    }
  }
  for (const auto& r : registry.refused()) std::cout << "refused: " << r.reason << "\n";
  if (registry.plugins().empty()) {
    std::ostringstream searched;  // each folder quoted, as a path is written to a stream
    for (const auto& d : PluginRegistry::search_path(g.plugin_paths)) searched << " " << d;
    throw bad_input("orch: no plugins found; searched:" + searched.str());
  }
  return kExitOk;
}

}  // namespace

void add_plugins_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand("plugins", "list every plugin found on the search path");
  cmd->callback([&g, &exit_code] { exit_code = run_plugins(g); });
}

}  // namespace orch::cli
