// `orch export --format csv|json`: a sweep's runs, one row each, with configuration and metrics;
// `orch export --to mlflow` pushes them to an MLflow tracking server (cli/export_mlflow.h).
#include <iostream>

#include "cli/command_failure.h"
#include "cli/commands.h"
#include "cli/export_mlflow.h"
#include "report/export.h"
#include "report/input_error.h"
#include "report/output_target.h"
#include "report/shown_runs.h"
#include "report/sweep_choice.h"
#include "sweep/environment_fault.h"

namespace orch::cli {

void add_export_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "export",
      "write a sweep's runs (configuration and metrics) as CSV or JSON, or push them to MLflow");
  struct Options {
    std::string format, sweep, output;
    int revision = 0;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--format", o->format,
                  "csv (RFC 4180) or json (an array of flat objects); required without --to")
      ->check(CLI::IsMember({"csv", "json"}));
  auto m = std::make_shared<MlflowExportOptions>();
  cmd->add_option("--to", m->to, "push the runs to a tracking server instead: mlflow")
      ->check(CLI::IsMember({"mlflow"}));
  cmd->add_option("--tracking-uri", m->tracking_uri,
                  "with --to mlflow: the server, e.g. http://localhost:5000 (default: "
                  "MLFLOW_TRACKING_URI)");
  cmd->add_option("--experiment", m->experiment,
                  "with --to mlflow: the MLflow experiment (default: the sweep's experiment)");
  cmd->add_option("--sweep", o->sweep, "the sweep (default: the latest, whose run started last)");
  cmd->add_option("-o,--output", o->output,
                  "write to this file instead of standard output (- is standard output)");
  cmd->add_option("--revision", o->revision, "the sweep's plan revision (default: the latest)");
  cmd->callback([&g, &exit_code, o, m] {
    try {
      if (wants_mlflow(*m)) {
        *m = MlflowExportOptions{m->to,     m->tracking_uri, m->experiment, o->format,
                                 o->output, o->sweep,        o->revision};
        return export_to_mlflow(g.db, *m);
      }
      if (o->format.empty())
        throw bad_input("orch export: --format csv|json (or --to mlflow) is required");
      if (o->output == "-") o->output.clear();
      if (!o->output.empty()) {
        check_output_target(o->output, g.db,
                            o->format == "csv" ? OutputKind::kCsv : OutputKind::kJson);
      }
      auto store = open_existing_store(g.db);
      const auto sweep = choose_sweep(*store, o->sweep);
      const ShownRuns shown = shown_runs(*store, sweep, o->revision);
      if (!shown.note.empty()) std::cerr << "orch: " << shown.note << "\n";
      const ExportTable table = export_table(shown.runs);
      const std::string text = o->format == "csv" ? to_csv(table) : to_json(table);
      if (o->output.empty()) {
        std::cout << text << std::flush;
      } else {
        // Checked and renamed into place: a full disk is an environment fault naming the path
        // and errno (exit 4), never a truncated file that looks complete.
        sweep::write_file_atomically(o->output, text);
        std::cerr << "orch: " << table.rows.size() << " runs of " << describe_sweep(sweep)
                  << " written to " << o->output << "\n";
      }
    } catch (const InputError& e) {
      std::cerr << "orch: " << e.what() << "\n";
      exit_code = kExitBadInput;
    }
  });
}

}  // namespace orch::cli
