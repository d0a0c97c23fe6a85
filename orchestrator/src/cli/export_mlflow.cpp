// `orch export --to mlflow`: options, the push and its summary.
#include "cli/export_mlflow.h"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

#include "cli/command_failure.h"
#include "report/input_error.h"
#include "report/mlflow_export.h"
#include "report/shown_runs.h"
#include "report/sweep_choice.h"

namespace orch::cli {

bool wants_mlflow(const MlflowExportOptions& o) {
  return !o.to.empty() || !o.tracking_uri.empty() || !o.experiment.empty();
}

void export_to_mlflow(const std::string& db, const MlflowExportOptions& o) {
  if (o.to.empty()) {
    throw bad_input("orch export: --tracking-uri and --experiment go with --to mlflow");
  }
  if (!o.format.empty() || !o.output.empty()) {
    throw bad_input(
        "orch export: --to mlflow pushes to a tracking server; it takes no --format or -o");
  }
  std::string uri = o.tracking_uri;
  if (uri.empty()) {
    const char* env = std::getenv("MLFLOW_TRACKING_URI");
    if (env) uri = env;
  }
  if (uri.empty()) {
    throw bad_input(
        "orch export: --to mlflow needs the tracking server: --tracking-uri URI (or "
        "MLFLOW_TRACKING_URI), e.g. --tracking-uri http://localhost:5000");
  }
  mlflow_base_url(uri);  // a URI that is not http(s) is bad input before the database is read

  auto store = open_existing_store(db);
  const auto sweep = choose_sweep(*store, o.sweep);
  const ShownRuns shown = shown_runs(*store, sweep, o.revision);
  if (!shown.note.empty()) std::cerr << "orch: " << shown.note << "\n";
  const std::string experiment = o.experiment.empty() ? sweep.experiment : o.experiment;
  const auto http = make_http_client();

  MlflowPushResult done;
  try {
    push_to_mlflow(*http, uri, experiment, *store, sweep, shown.runs, done);
  } catch (const MlflowError& e) {
    const int pushed = done.created + done.replaced;
    const int code = e.kind() == MlflowError::Kind::kRejected ? kExitRunFailed : kExitEnvironment;
    throw CommandFailure(
        code, fmt::format("orch export: {}\norch export: {} of {} runs of sweep '{}' were pushed "
                          "before this ({} already there); the same command pushes the rest "
                          "(a run half pushed is pushed again, none twice)",
                          e.what(), pushed, shown.runs.size(), sweep.name, done.already));
  }
  std::string summary = fmt::format("{} created, {} already there", done.created, done.already);
  if (done.replaced) {
    summary +=
        fmt::format(", {} pushed again (half pushed before, or retried since)", done.replaced);
  }
  if (done.running) summary += fmt::format(", {} still running (not pushed)", done.running);
  std::cerr << fmt::format(
      "orch: {} runs of sweep '{}' pushed to MLflow experiment '{}' (id {}{}) "
      "at {}: {}\n",
      shown.runs.size() - static_cast<std::size_t>(done.running), sweep.name, experiment,
      done.experiment_id, done.experiment_created ? ", created" : "", uri, summary);
}

}  // namespace orch::cli
