// `orch exec --worker`: a warm worker for `orch sweep` (`isolation: worker`,
// sweep/worker_pool.h). It loads the plugins once, then takes run after run from its stdin, one
// JSON request a line:
//   {"spec": PATH, "out": PATH, "stdout": PATH, "stderr": PATH, "trace": PATH, "batch_size": N}
// (trace and batch_size optional), runs each in this process with fd 1 and fd 2 pointed at the
// run's own logs, writes its result document atomically, resets what the run changed that
// outlives it (runner/run_reset.h) and answers one line on the reply channel, the stdout it was
// started with: {"seq": N, "status": "ok"}. It ends when its stdin closes (or its parent dies,
// --parent-pid). Anything that kills it mid-run costs that run only: the sweep writes the run's
// document from the exit status and the run's stderr, as for a run's own process.
#pragma once

#include "cli/commands.h"

namespace orch::cli {

/// The worker's loop; returns the exit code (0 once stdin is closed).
int run_exec_worker(const GlobalOptions& g);

}  // namespace orch::cli
