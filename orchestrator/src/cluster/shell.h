// Shell quoting and running a command with its output captured: what the Slurm client needs to
// write a script that survives paths with spaces and to call sbatch/squeue/sacct.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace orch::cluster {

/// `s` as one word for bash: single-quoted, with embedded single quotes as '\''.
std::string shell_quote(const std::string& s);

/// Each argument quoted, joined with spaces.
std::string shell_join(const std::vector<std::string>& argv);

struct CommandOutput {
  int exit_code = -1;  ///< -1: could not be started, or ended by a signal
  std::string output;  ///< stdout and stderr together
};

/// Runs argv (searched in PATH) and waits for it, reading its output through signals that
/// interrupt the wait; one that has not ended within `timeout` is stopped (exit_code -1, the
/// output saying so): a hung scheduler command must not hang orch.
CommandOutput run_capture(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::minutes(2));

}  // namespace orch::cluster
