// `orch compare A B`: two configurations (or runs) of a sweep side by side, with the change.
#include <iostream>

#include "cli/commands.h"
#include "report/compare.h"
#include "report/input_error.h"
#include "report/sweep_choice.h"

namespace orch::cli {

void add_compare_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "compare", "before/after table of two configurations: throughput, GPU use, memory, power, step split");
  struct Options {
    std::string a, b, sweep;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("A", o->a, "before: a configuration name, run id or config-hash prefix "
                             "(name:, run:, hash: force one reading)")->required();
  cmd->add_option("B", o->b, "after: same forms as A")->required();
  cmd->add_option("--sweep", o->sweep, "the sweep (default: the most recently updated)");
  cmd->callback([&g, &exit_code, o] {
    try {
      auto store = open_existing_store(g.db);
      const auto sweep = choose_sweep(*store, o->sweep);
      const auto runs = store->runs(sweep.id);
      const Selection a = select_runs(*store, runs, o->a);
      const Selection b = select_runs(*store, runs, o->b);
      std::cout << describe_sweep(sweep) << "\n" << format_comparison(a, b);
    } catch (const InputError& e) {
      std::cerr << "orch: " << e.what() << "\n";
      exit_code = kExitBadInput;
    }
  });
}

}  // namespace orch::cli
