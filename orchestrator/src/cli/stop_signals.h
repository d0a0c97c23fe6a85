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
/// (`nohup orch sweep ...`, a background job) stay ignored. The flag is process-wide, as
/// signals are; one made while another is alive (a step inside a command that holds one to its
/// end) shares the flag and leaves it as it is. One thread only.
class StopSignals {
 public:
  StopSignals();  ///< clears the flag unless another is alive, then installs the handler
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// Set by a signal; whoever else decides to stop (a vanished reader of stdout) may set it too.
  std::atomic<bool>& flag();

 private:
  [[maybe_unused]] bool cleared_;  ///< first: the flag is cleared before any handler is installed
  process::SignalGuard int_, term_, hup_;
};

/// For a command's last moments, once its exit code is decided: SIGINT, SIGTERM and SIGHUP are
/// blocked until the process exits, so that one landing while it tears down (a flush, the
/// libraries' destructors) neither ends it by the signal nor changes the code it decided.
/// Nothing is started after this: a child would inherit the blocked signals.
void hold_stop_signals_until_exit();

}  // namespace orch::cli
