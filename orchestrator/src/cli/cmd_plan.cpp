// `orch plan FILE [key=value ...]`: expand and validate an experiment, print its runs, run
// nothing.
#include <iostream>

#include "cli/commands.h"
#include "cli/plugin_loading.h"
#include "plan/plan_error.h"
#include "plan/plan_table.h"
#include "plan/planner.h"

namespace orch::cli {

void add_plan_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand("plan", "expand and validate an experiment; runs nothing");
  struct Args {
    std::string file;
    std::vector<std::string> overrides;
    std::size_t max_runs = 10000;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("file", args->file, "experiment YAML")->required();
  cmd->add_option("overrides", args->overrides, "key=value overrides (dotted keys, YAML values)");
  cmd->add_option("--max-runs", args->max_runs, "refuse plans with more runs than this")
      ->capture_default_str();
  cmd->callback([&g, &exit_code, args] {
    PluginRegistry registry;
    load_registry(registry, g);
    try {
      Plan plan = make_plan(args->file, registry, {args->overrides, args->max_runs});
      std::cout << format_plan_table(plan);
    } catch (const PlanError& e) {
      std::cerr << e.what() << "\n";
      exit_code = kExitBadInput;
    }
  });
}

}  // namespace orch::cli
