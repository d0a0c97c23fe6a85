// A child process in its own process group, started with posix_spawn, polled without blocking,
// and stopped with SIGTERM then SIGKILL. Each run of a sweep executes in one, because CUDA
// errors such as an illegal address poison the whole process that met them.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace orch::sweep {

/// How a process ended: an exit code, or the signal that killed it.
struct ExitStatus {
  int exit_code = -1;  ///< -1 when killed by a signal
  int signal = 0;      ///< 0 when it exited
  /// "exit code 3", "signal 11 (SIGSEGV)".
  std::string describe() const;
};

struct ChildOptions {
  std::vector<std::string> argv;           ///< argv[0] is the program path
  std::map<std::string, std::string> env;  ///< set (or replaced) in the child's environment
  std::vector<std::string> unset_env;      ///< removed from the child's environment
  std::string stdout_path, stderr_path;    ///< files the child's output goes to (truncated)
};

class ChildProcess {
 public:
  /// Starts the child; throws std::system_error when it cannot be started.
  explicit ChildProcess(const ChildOptions& options);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  /// A child still running at destruction is killed and reaped: no orphans, no zombies.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  /// The exit status once the child has ended (reaped on the first call that sees it).
  std::optional<ExitStatus> poll();
  /// Blocks until the child ends.
  ExitStatus wait();
  /// Sends `sig` to the child's whole process group (its own children too).
  void signal_group(int sig);

 private:
  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
};

/// The last `max_bytes` of a text file (from a line start where possible); empty if unreadable.
std::string file_tail(const std::string& path, std::size_t max_bytes = 4000);

}  // namespace orch::sweep
