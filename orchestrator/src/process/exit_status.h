// How a process ended: its exit code, or the signal that killed it.
#pragma once

#include <string>

namespace orch::process {

struct ExitStatus {
  int exit_code = -1;  ///< -1 when killed by a signal (or when the status was lost)
  int signal = 0;      ///< 0 when it exited
  bool exited() const { return signal == 0 && exit_code >= 0; }
  bool success() const { return signal == 0 && exit_code == 0; }
  /// "exit code 3", "signal 11 (SIGSEGV)".
  std::string describe() const;
};

/// A status from waitpid decoded.
ExitStatus decode_wait_status(int status);

/// "SIGSEGV" for 11; "" for a number the C library does not name.
std::string signal_name(int sig);

}  // namespace orch::process
