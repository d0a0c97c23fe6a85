// `orch report`: one self-contained HTML file for a sweep (ranking, charts, before/after,
// environment, failures, telemetry), to open in any browser or mail to a colleague.
#include <iostream>

#include "cli/commands.h"
#include "report/html_report.h"
#include "report/output_target.h"
#include "report/sweep_choice.h"
#include "sweep/environment_fault.h"

namespace orch::cli {
namespace {

struct ReportArgs {
  std::string sweep, experiment, output;
};

int run_report(const ReportArgs& a, const GlobalOptions& g) {
  check_output_target(a.output, g.db, OutputKind::kHtml);
  auto store = open_existing_store(g.db);
  const auto sweep = choose_sweep(*store, a.sweep, a.experiment);
  const std::string html = html_report(*store, sweep);
  // Written beside the target and renamed over it, so a reader never sees half a file;
  // a write that fails is an environment fault naming the path and errno (exit 4).
  sweep::write_file_atomically(a.output, html);
  std::cerr << "orch: report of " << describe_sweep(sweep) << " written to " << a.output << "\n";
  std::cout << a.output << "\n";
  return kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand("report",
                                 "write a sweep's ranking, charts and telemetry as one HTML file");
  auto a = std::make_shared<ReportArgs>();
  cmd->add_option("--sweep", a->sweep, "the sweep (default: the latest, whose run started last)");
  cmd->add_option("--experiment", a->experiment,
                  "the latest sweep of this experiment (its `name`)");
  cmd->add_option("-o,--output", a->output, "the HTML file to write")->required();
  cmd->callback([&g, &exit_code, a] { exit_code = run_report(*a, g); });
}

}  // namespace orch::cli
