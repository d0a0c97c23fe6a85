// `orch report`: one self-contained HTML file for a sweep (ranking, charts, before/after,
// environment, failures, telemetry), to open in any browser or mail to a colleague.
#include <iostream>

#include "cli/commands.h"
#include "report/html_report.h"
#include "report/input_error.h"
#include "report/output_target.h"
#include "report/sweep_choice.h"
#include "sweep/environment_fault.h"

namespace orch::cli {

void add_report_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand("report",
                                 "write a sweep's ranking, charts and telemetry as one HTML file");
  struct Options {
    std::string sweep, experiment, output;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--sweep", o->sweep, "the sweep (default: the latest, whose run started last)");
  cmd->add_option("--experiment", o->experiment,
                  "the latest sweep of this experiment (its `name`)");
  cmd->add_option("-o,--output", o->output, "the HTML file to write")->required();
  cmd->callback([&g, &exit_code, o] {
    try {
      check_output_target(o->output, g.db, OutputKind::kHtml);
      auto store = open_existing_store(g.db);
      const auto sweep = choose_sweep(*store, o->sweep, o->experiment);
      const std::string html = html_report(*store, sweep);
      // Written beside the target and renamed over it, so a reader never sees half a file;
      // a write that fails is an environment fault naming the path and errno (exit 4).
      sweep::write_file_atomically(o->output, html);
      std::cerr << "orch: report of " << describe_sweep(sweep) << " written to " << o->output
                << "\n";
      std::cout << o->output << "\n";
    } catch (const InputError& e) {
      std::cerr << "orch: " << e.what() << "\n";
      exit_code = kExitBadInput;
    }
  });
}

}  // namespace orch::cli
