// `orch export --format csv|json`: a sweep's runs, one row each, with configuration and metrics;
// `orch export --to mlflow` pushes them to an MLflow tracking server (cli/export_mlflow.h).
#include <iostream>

#include "cli/command_failure.h"
#include "cli/commands.h"
#include "cli/export_mlflow.h"
#include "report/export.h"
#include "report/output_target.h"
#include "report/shown_runs.h"
#include "report/sweep_choice.h"
#include "sweep/environment_fault.h"

namespace orch::cli {
namespace {

struct ExportArgs {
  std::string format, sweep, output;
  int revision = 0;
  MlflowExportOptions mlflow;  ///< --to, --tracking-uri, --experiment
};

int run_export(const ExportArgs& a, const GlobalOptions& g) {
  if (wants_mlflow(a.mlflow)) {
    export_to_mlflow(
        g.db, MlflowExportOptions{a.mlflow.to, a.mlflow.tracking_uri, a.mlflow.experiment, a.format,
                                  a.output, a.sweep, a.revision});
    return kExitOk;
  }
  if (a.format.empty())
    throw bad_input("orch export: --format csv|json (or --to mlflow) is required");
  const std::string output = a.output == "-" ? "" : a.output;  // "" is standard output
  if (!output.empty()) {
    check_output_target(output, g.db, a.format == "csv" ? OutputKind::kCsv : OutputKind::kJson);
  }
  auto store = open_existing_store(g.db);
  const auto sweep = choose_sweep(*store, a.sweep);
  const ShownRuns shown = shown_runs(*store, sweep, a.revision);
  if (!shown.note.empty()) std::cerr << "orch: " << shown.note << "\n";
  const ExportTable table = export_table(shown.runs);
  const std::string text = a.format == "csv" ? to_csv(table) : to_json(table);
  if (output.empty()) {
    std::cout << text << std::flush;
  } else {
    // Checked and renamed into place: a full disk is an environment fault naming the path
    // and errno (exit 4), never a truncated file that looks complete.
    sweep::write_file_atomically(output, text);
    std::cerr << "orch: " << table.rows.size() << " runs of " << describe_sweep(sweep)
              << " written to " << output << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_export_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "export",
      "write a sweep's runs (configuration and metrics) as CSV or JSON, or push them to MLflow");
  auto a = std::make_shared<ExportArgs>();
  cmd->add_option("--format", a->format,
                  "csv (RFC 4180) or json (an array of flat objects); required without --to")
      ->check(CLI::IsMember({"csv", "json"}));
  cmd->add_option("--to", a->mlflow.to, "push the runs to a tracking server instead: mlflow")
      ->check(CLI::IsMember({"mlflow"}));
  cmd->add_option("--tracking-uri", a->mlflow.tracking_uri,
                  "with --to mlflow: the server, e.g. http://localhost:5000 (default: "
                  "MLFLOW_TRACKING_URI)");
  cmd->add_option("--experiment", a->mlflow.experiment,
                  "with --to mlflow: the MLflow experiment (default: the sweep's experiment)");
  cmd->add_option("--sweep", a->sweep, "the sweep (default: the latest, whose run started last)");
  cmd->add_option("-o,--output", a->output,
                  "write to this file instead of standard output (- is standard output)");
  cmd->add_option("--revision", a->revision, "the sweep's plan revision (default: the latest)");
  cmd->callback([&g, &exit_code, a] { exit_code = run_export(*a, g); });
}

}  // namespace orch::cli
