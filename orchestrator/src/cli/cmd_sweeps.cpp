// `orch sweeps`: the sweeps of the database, the latest first (the one rank, compare, export
// and report show when no --sweep is given), with when they ran and how their runs ended.
#include <iostream>

#include "cli/commands.h"
#include "plan/terminal_text.h"
#include "report/input_error.h"
#include "report/sweep_choice.h"
#include "report/sweep_listing.h"

namespace orch::cli {

void add_sweeps_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "sweeps", "list the database's sweeps, the latest first (the one whose run started last)");
  struct Options {
    std::string experiment;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--experiment", o->experiment, "only the sweeps of this experiment (its `name`)");
  cmd->add_flag("--json", o->json, "print a JSON array of objects instead of the table");
  cmd->callback([&g, &exit_code, o] {
    try {
      auto store = open_existing_store(g.db);
      std::vector<storage::SweepListing> listing = store->sweep_listing();
      if (!o->experiment.empty()) {
        std::erase_if(listing, [&](const auto& l) { return l.sweep.experiment != o->experiment; });
      }
      if (o->json) {
        std::cout << sweep_listing_json(listing).dump(2) << "\n";
      } else if (listing.empty()) {
        std::cout << "no sweeps" << (o->experiment.empty() ? "" : " of experiment " + o->experiment)
                  << " in " << terminal_text(g.db) << "\n";
      } else {
        std::cout << format_sweep_listing(listing);
      }
    } catch (const InputError& e) {
      std::cerr << "orch: " << e.what() << "\n";
      exit_code = kExitBadInput;
    }
  });
}

}  // namespace orch::cli
