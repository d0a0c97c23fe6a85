// The status of a run, as the result document and the store's `runs.status` spell it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace orch {

enum class RunStatus {
  running,      ///< begun, not finished: only in the store (a document is written at the end)
  ok,           ///< measured
  failed,       ///< an error, a crash, or a process that ended without a result
  oom,          ///< out of GPU or host memory: the configuration's own outcome
  timeout,      ///< stopped at the run's timeout
  interrupted,  ///< stopped because the sweep was stopped
  skipped,      ///< not run (its GPU slots were retired)
  diverged,     ///< ran, but its loss became NaN or infinite: not ranked by default
  /// measured ok in a rung of successive halving, and its configuration was dropped there
  /// (sweep/halving.h): only in the store, set by the sweep after the rung's cut
  pruned,
};

/// "ok", "failed", ...: the spelling in documents, the store and the commands' output.
std::string to_string(RunStatus status);

/// The status spelled `text`; nullopt for any other text.
std::optional<RunStatus> parse_run_status(std::string_view text);

/// A finished run that a resumed sweep does not run again (unless told to retry failures):
/// failed, oom, timeout, skipped or diverged. Not `pruned`: a resumed sweep does not run a
/// pruned run again either, but it measured what it had to, so it is no failure.
bool is_final_failure(RunStatus status);

}  // namespace orch
