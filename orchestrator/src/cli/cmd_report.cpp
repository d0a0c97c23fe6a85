// `orch report`: one self-contained HTML file for a sweep (ranking, charts, before/after,
// environment, failures, telemetry), to open in any browser or mail to a colleague.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "report/html_report.h"
#include "report/input_error.h"
#include "report/output_target.h"
#include "report/sweep_choice.h"

namespace orch::cli {

void add_report_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand("report",
                                 "write a sweep's ranking, charts and telemetry as one HTML file");
  struct Options {
    std::string sweep, experiment, output;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--sweep", o->sweep, "the sweep (default: the most recently updated)");
  cmd->add_option("--experiment", o->experiment,
                  "the latest sweep of this experiment (its `name`)");
  cmd->add_option("-o,--output", o->output, "the HTML file to write")->required();
  cmd->callback([&g, &exit_code, o] {
    try {
      check_output_target(o->output, g.db, OutputKind::kHtml);
      auto store = open_existing_store(g.db);
      const auto sweep = choose_sweep(*store, o->sweep, o->experiment);
      const std::string html = html_report(*store, sweep);
      // Written beside the target and renamed over it, so a reader never sees half a file.
      const std::string tmp = o->output + ".tmp";
      {
        std::ofstream out(tmp, std::ios::binary);
        out << html;
        out.close();
        if (!out) {
          std::cerr << "orch: cannot write " << o->output << "\n";
          std::error_code ec;
          std::filesystem::remove(tmp, ec);
          exit_code = kExitRunFailed;
          return;
        }
      }
      std::error_code ec;
      std::filesystem::rename(tmp, o->output, ec);
      if (ec) {
        std::cerr << "orch: cannot write " << o->output << ": " << ec.message() << "\n";
        std::filesystem::remove(tmp, ec);
        exit_code = kExitRunFailed;
        return;
      }
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
