// SIGINT, SIGTERM and SIGHUP as a request to stop, for the commands that run long and must end
// cleanly: `sweep` (runs in flight recorded interrupted), `--check`, and following a Slurm job.
// SIGHUP is among them because a closed terminal or ssh session should stop a command as
// cleanly as Ctrl-C, not kill it mid-write.
#pragma once

#include <atomic>

#include "process/signal_guard.h"

namespace orch::cli {

/// While alive, the three signals set a flag instead of ending the process; the previous
/// handlers come back when it goes. SIGHUP and SIGINT that were ignored when it was made
/// (`nohup orch sweep ...`, a background job) stay ignored. One at a time: the flag is
/// process-wide, as signals are.
class StopSignals {
 public:
  StopSignals();  ///< clears the flag, then installs the handler
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// Set by a signal; whoever else decides to stop (a vanished reader of stdout) may set it too.
  std::atomic<bool>& flag();

 private:
  [[maybe_unused]] bool cleared_;  ///< first: the flag is cleared before any handler is installed
  process::SignalGuard int_, term_, hup_;
};

}  // namespace orch::cli
