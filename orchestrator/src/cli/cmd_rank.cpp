// `orch rank`: recorded configurations ranked by throughput.
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "report/rank_table.h"
#include "storage/store.h"

namespace orch::cli {

void add_rank_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand("rank", "rank recorded configurations by throughput");
  auto experiment = std::make_shared<std::string>();
  cmd->add_option("--experiment", *experiment, "only this experiment (its `name`)");
  cmd->callback([&g, &exit_code, experiment] {
    if (!std::filesystem::exists(g.db)) {
      std::cerr << "orch: no database at " << g.db << " (run an experiment first, or pass --db)\n";
      exit_code = kExitBadInput;
      return;
    }
    storage::Store store(g.db);
    std::cout << format_ranking(store.ranking(*experiment));
  });
}

}  // namespace orch::cli
