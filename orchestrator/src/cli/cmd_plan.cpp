// `orch plan FILE [key=value ...]`: expand and validate an experiment, print its runs, run
// nothing.
#include <iostream>

#include "cli/commands.h"
#include "cli/plan_arguments.h"
#include "cli/plugin_loading.h"
#include "plan/plan_table.h"

namespace orch::cli {

void add_plan_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand("plan", "expand and validate an experiment; runs nothing");
  auto args = std::make_shared<PlanArguments>();
  add_plan_arguments(*cmd, *args);
  cmd->callback([&g, &exit_code, args] {
    PluginRegistry registry;
    load_registry(registry, g);
    if (auto plan = plan_or_report(*args, registry)) {
      std::cout << format_plan_table(*plan);
    } else {
      exit_code = kExitBadInput;
    }
  });
}

}  // namespace orch::cli
