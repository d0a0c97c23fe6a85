// A child process: a program started with its standard streams from /dev/null, a file, a pipe
// or this process's own, then polled without blocking, signalled alone or with its process
// group, waited for with a deadline, and stopped with SIGTERM, a grace period and SIGKILL. The
// sweep runs each run's `orch exec` in one; `orch exec` runs a script's program in one; a worker
// that takes run after run through its pipes is one too.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "process/exit_status.h"
#include "process/unique_fd.h"

namespace orch::process {

/// Where one of the child's standard streams comes from or goes to.
struct Stdio {
  enum class Kind { null, inherit, file, pipe };
  Kind kind = Kind::null;
  std::string path;  ///< Kind::file: created or truncated (stdin: opened for reading)

  static Stdio null() { return {}; }
  static Stdio inherit() { return {Kind::inherit, {}}; }
  static Stdio file(std::string path) { return {Kind::file, std::move(path)}; }
  static Stdio pipe() { return {Kind::pipe, {}}; }
};

struct ChildOptions {
  std::vector<std::string> argv;           ///< argv[0] is the program
  std::map<std::string, std::string> env;  ///< set (or replaced) in the child's environment
  std::vector<std::string> unset_env;      ///< removed from the child's environment
  Stdio in, out, err;                      ///< /dev/null unless said otherwise
  /// argv[0] without a slash is looked up on PATH (else it names a file, as posix_spawn does).
  bool search_path = false;
  /// Its own process group, so that signal_group reaches whatever it starts too; otherwise it
  /// stays in this process's group (and dies with a signal sent to that group).
  bool own_group = true;
  /// Every signal at its default disposition in the child, except those ignored when orch
  /// started (nohup's SIGHUP stays ignored; spawn.cpp). Otherwise signals this process ignores
  /// stay ignored there (what execve does), and only handlers are reset.
  bool default_signals = true;
  /// Killed (SIGKILL) when this process ends, however it ends (PR_SET_PDEATHSIG). Started with
  /// fork rather than posix_spawn then: the request has to be made in the child.
  bool die_with_parent = false;
};

/// A child that could not be started: the step that failed and errno (`code()`).
class SpawnError : public std::system_error {
 public:
  enum class Step { pipe, open, fork, exec };
  SpawnError(Step step, int err, const std::string& what)
      : std::system_error(err, std::generic_category(), what), step_(step) {}
  Step step() const { return step_; }

 private:
  Step step_;
};

class Child {
 public:
  /// Starts the child; throws SpawnError when it cannot be started.
  explicit Child(const ChildOptions& options);
  Child(Child&& o) noexcept;
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  /// A child still running at destruction is killed (with its group when it has its own) and
  /// reaped: no orphans, no zombies.
  ~Child();

  pid_t pid() const { return pid_; }
  /// This process's ends of the pipes asked for (Stdio::pipe); -1 for the others.
  int stdin_fd() const { return in_.get(); }
  int stdout_fd() const { return out_.get(); }
  int stderr_fd() const { return err_.get(); }
  /// Closes the child's stdin pipe: the child reads end-of-file.
  void close_stdin() { in_.reset(); }

  /// The exit status once the child has ended (reaped on the first call that sees it).
  std::optional<ExitStatus> poll();
  /// Blocks until the child ends.
  ExitStatus wait();
  /// The exit status if the child ends within `timeout`.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  /// Sends `sig` to the child alone. Nothing once it has been reaped.
  void signal(int sig);
  /// Sends `sig` to the child's process group (its own children too) when it has one of its
  /// own, else (or when that group is gone) to the child alone.
  void signal_group(int sig);
  /// SIGTERM to the group, `grace` to end, then SIGKILL; returns how it ended.
  ExitStatus stop(std::chrono::milliseconds grace);

 private:
  void reaped(int wait_status);

  pid_t pid_ = -1;
  bool own_group_ = true;
  UniqueFd in_, out_, err_;
  std::optional<ExitStatus> status_;
};

/// Whether `pid` is a Child of this process that has not been reaped yet: what the subreaper
/// (leftovers.h) must leave alone.
bool is_live_child(pid_t pid);

}  // namespace orch::process
