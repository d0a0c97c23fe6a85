// `orch export --format csv|json`: a sweep's runs, one row each, with configuration and metrics.
#include <iostream>

#include "cli/commands.h"
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
};

int run_export(const ExportArgs& a, const GlobalOptions& g) {
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
  auto* cmd = app.add_subcommand("export",
                                 "write a sweep's runs (configuration and metrics) as CSV or JSON");
  auto a = std::make_shared<ExportArgs>();
  cmd->add_option("--format", a->format, "csv (RFC 4180) or json (an array of flat objects)")
      ->required()
      ->check(CLI::IsMember({"csv", "json"}));
  cmd->add_option("--sweep", a->sweep, "the sweep (default: the latest, whose run started last)");
  cmd->add_option("-o,--output", a->output,
                  "write to this file instead of standard output (- is standard output)");
  cmd->add_option("--revision", a->revision, "the sweep's plan revision (default: the latest)");
  cmd->callback([&g, &exit_code, a] { exit_code = run_export(*a, g); });
}

}  // namespace orch::cli
