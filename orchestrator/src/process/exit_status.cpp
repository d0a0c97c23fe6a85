#include "process/exit_status.h"

#include <string.h>
#include <sys/wait.h>

namespace orch::process {

ExitStatus decode_wait_status(int status) {
  ExitStatus s;
  if (WIFEXITED(status))
    s.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    s.signal = WTERMSIG(status);
  return s;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : std::string();
}

std::string ExitStatus::describe() const {
  if (signal == 0) return "exit code " + std::to_string(exit_code);
  const std::string name = signal_name(signal);
  return "signal " + std::to_string(signal) + (name.empty() ? "" : " (" + name + ")");
}

}  // namespace orch::process
