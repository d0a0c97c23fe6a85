// `orch rank`: a sweep's configurations ranked by a metric, repeats aggregated to a mean with
// its 95% confidence interval, ties with the leader marked.
#include <iostream>

#include "cli/commands.h"
#include "report/halving_status.h"
#include "report/metric_catalog.h"
#include "report/rank_table.h"
#include "report/ranking.h"
#include "report/shown_runs.h"
#include "report/sweep_choice.h"
#include "result/core_metrics.h"

namespace orch::cli {
namespace {

struct RankArgs {
  std::string sweep, experiment, by = metric_key::kImagesPerS;
  std::size_t top = 0;
  int revision = 0;
  bool include_diverged = false;
};

int run_rank(const RankArgs& a, const GlobalOptions& g) {
  const MetricInfo& metric = require_metric(a.by);  // before touching the database
  auto store = open_existing_store(g.db);
  const auto sweep = choose_sweep(*store, a.sweep, a.experiment);
  const ShownRuns shown = shown_runs(*store, sweep, a.revision);
  const Diverged diverged = a.include_diverged ? Diverged::include : Diverged::leave_out;
  std::cout << format_rank_table(rank_runs(shown.runs, metric, a.top, diverged, shown.baseline),
                                 sweep);
  std::cout << format_halving(halving_status(shown));  // nothing for a grid
  if (!shown.note.empty()) std::cout << shown.note << "\n";
  return kExitOk;
}

}  // namespace

void add_rank_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd =
      app.add_subcommand("rank", "rank a sweep's configurations by a metric (default: throughput)");
  auto a = std::make_shared<RankArgs>();
  cmd->add_option("--sweep", a->sweep,
                  "the sweep to rank (default: the latest, whose run started last)");
  cmd->add_option("--experiment", a->experiment,
                  "the latest sweep of this experiment (its `name`)");
  cmd->add_option("--by", a->by, "the metric to rank by (lower-is-better ones rank ascending)")
      ->capture_default_str();
  cmd->add_option("--top", a->top, "show only the best N configurations (0: all)");
  cmd->add_option("--revision", a->revision,
                  "the sweep's plan revision to show (default: the latest)");
  cmd->add_flag("--include-diverged", a->include_diverged,
                "rank the runs whose loss became NaN or infinite too, marked DIVERGED (by default "
                "they are only listed below the ranking)");
  cmd->callback([&g, &exit_code, a] { exit_code = run_rank(*a, g); });
}

}  // namespace orch::cli
