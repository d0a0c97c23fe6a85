// `orch sweeps`: the sweeps of the database, the latest first (the one rank, compare, export
// and report show when no --sweep is given), with when they ran and how their runs ended.
#include <iostream>

#include "cli/commands.h"
#include "report/sweep_choice.h"
#include "report/sweep_listing.h"
#include "result/json_dump.h"
#include "text/terminal_text.h"

namespace orch::cli {
namespace {

struct SweepsArgs {
  std::string experiment;
  bool json = false;
};

int run_sweeps(const SweepsArgs& a, const GlobalOptions& g) {
  auto store = open_existing_store(g.db);
  std::vector<storage::SweepListing> listing = store->sweep_listing();
  if (!a.experiment.empty()) {
    std::erase_if(listing, [&](const auto& l) { return l.sweep.experiment != a.experiment; });
  }
  if (a.json) {
    std::cout << json_dump(sweep_listing_json(listing), 2) << "\n";
  } else if (listing.empty()) {
    std::cout << "no sweeps" << (a.experiment.empty() ? "" : " of experiment " + a.experiment)
              << " in " << terminal_text(g.db) << "\n";
  } else {
    std::cout << format_sweep_listing(listing);
  }
  return kExitOk;
}

}  // namespace

void add_sweeps_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "sweeps", "list the database's sweeps, the latest first (the one whose run started last)");
  auto a = std::make_shared<SweepsArgs>();
  cmd->add_option("--experiment", a->experiment, "only the sweeps of this experiment (its `name`)");
  cmd->add_flag("--json", a->json, "print a JSON array of objects instead of the table");
  cmd->callback([&g, &exit_code, a] { exit_code = run_sweeps(*a, g); });
}

}  // namespace orch::cli
