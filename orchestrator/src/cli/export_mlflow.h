// `orch export --to mlflow`: the command line's side of the push to an MLflow tracking server
// (report/mlflow_export.h does the pushing): which sweep, which server, which experiment, and
// how a failure ends (its message and exit code).
#pragma once

#include <string>

namespace orch::cli {

struct MlflowExportOptions {
  std::string to, tracking_uri, experiment;  ///< --to, --tracking-uri, --experiment
  std::string format, output, sweep;         ///< --format and -o (refused here), --sweep
  int revision = 0;                          ///< --revision
};

/// True when the command line asks for a push (--to, --tracking-uri or --experiment given).
bool wants_mlflow(const MlflowExportOptions& o);

/// Pushes the sweep's runs (those `orch export --format` would write) to the tracking server
/// (--tracking-uri, else MLFLOW_TRACKING_URI) into --experiment (default: the sweep's
/// experiment) and prints the summary on stderr. Bad input (no URI, one that is not http(s),
/// --format or -o beside --to) is an InputError or exit 2; a server that cannot be reached or
/// fails (HTTP 5xx) is exit 4, a request it refuses exit 1, each saying how many runs were
/// pushed before.
void export_to_mlflow(const std::string& db, const MlflowExportOptions& o);

}  // namespace orch::cli
