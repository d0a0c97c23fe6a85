// posix_spawn where it can: the parent may have LibTorch and CUDA libraries mapped, and glibc's
// posix_spawn uses a vfork-style clone that copies no page tables and runs no atfork handlers in
// the child. fork where the child must ask for something itself (PR_SET_PDEATHSIG); that child
// calls only async-signal-safe functions between fork and execve.
#include "process/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <set>
#include <stdexcept>

#include "plan/workload_config.h"  // find_on_path
#include "process/log_file.h"
#include "process/parent_death.h"

extern char** environ;

namespace orch::process::detail {
namespace {

// The signals ignored by whoever started this process (nohup: SIGHUP; a shell's background job:
// SIGINT and SIGQUIT), as they were before main() changed any (orch ignores SIGPIPE itself and
// catches the stop signals while a sweep runs). A child started with every signal at its
// default keeps these ignored: `nohup orch sweep` must not leave its runs to die by SIGHUP.
const sigset_t& ignored_at_start() {
  static const sigset_t set = [] {
    sigset_t s;
    sigemptyset(&s);
    for (int sig = 1; sig < NSIG; ++sig) {
      struct sigaction now {};
      if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) sigaddset(&s, sig);
    }
    return s;
  }();
  return set;
}
// Read during static initialization, before main() runs.
[[maybe_unused]] const sigset_t& g_ignored_at_start = ignored_at_start();

// What the child is given, prepared before it exists: no allocation after fork.
struct Prepared {
  std::string program;
  std::vector<std::string> args_storage, env_storage;
  std::vector<char*> argv, envp;
  std::array<UniqueFd, 3> child_ends;   ///< pipes: the child's end of each stream
  std::array<UniqueFd, 3> parent_ends;  ///< pipes: ours
};

std::vector<std::string> child_environment(const ChildOptions& o) {
  // The parent's, minus what is unset or replaced, plus the overrides.
  std::set<std::string> drop(o.unset_env.begin(), o.unset_env.end());
  for (const auto& [k, v] : o.env) drop.insert(k);
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    if (!drop.count(entry.substr(0, entry.find('=')))) out.push_back(entry);
  }
  for (const auto& [k, v] : o.env) out.push_back(k + "=" + v);
  return out;
}

// A log file (Stdio::file for stdout or stderr), opened here rather than in the child so that
// it is checked at its descriptor before anything is truncated (log_file.h).
UniqueFd open_log(const std::string& path) {
  try {
    return open_log_file(path);
  } catch (const LogFileError& e) {
    throw SpawnError(SpawnError::Step::open, e.error != 0 ? e.error : EINVAL, e.what());
  }
}

void prepare(const ChildOptions& o, Prepared& p) {
  if (o.argv.empty()) throw std::invalid_argument("process::Child: empty argv");
  p.program = o.argv[0];
  if (o.search_path && p.program.find('/') == std::string::npos) {
    // Else execve fails with ENOENT, the program's own failure.
    if (const std::string found = find_on_path(p.program); !found.empty()) p.program = found;
  }
  p.env_storage = child_environment(o);
  p.args_storage = o.argv;
  for (auto& s : p.env_storage) p.envp.push_back(s.data());
  p.envp.push_back(nullptr);
  for (auto& s : p.args_storage) p.argv.push_back(s.data());
  p.argv.push_back(nullptr);
  const Stdio* streams[3] = {&o.in, &o.out, &o.err};
  for (int fd = 0; fd < 3; ++fd) {
    if (fd > 0 && streams[fd]->kind == Stdio::Kind::file)
      p.child_ends[fd] = open_log(streams[fd]->path);
    if (streams[fd]->kind != Stdio::Kind::pipe) continue;
    Pipe pipe;
    try {
      pipe = make_pipe();
    } catch (const std::system_error& e) {
      throw SpawnError(SpawnError::Step::pipe, e.code().value(), "cannot make a pipe");
    }
    p.child_ends[fd] = fd == 0 ? std::move(pipe.read) : std::move(pipe.write);
    p.parent_ends[fd] = fd == 0 ? std::move(pipe.write) : std::move(pipe.read);
  }
}

// What the child opens itself: a file as its stdin, /dev/null for any stream (log files are
// opened by open_log in the parent). No O_CLOEXEC: glibc closes the target descriptor before
// opening, so the file usually gets that very number and would be closed again by the exec.
int open_flags(int fd) { return fd == 0 ? O_RDONLY : O_WRONLY; }

pid_t with_posix_spawn(const ChildOptions& o, Prepared& p) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const Stdio* streams[3] = {&o.in, &o.out, &o.err};
  for (int fd = 0; fd < 3; ++fd) {
    const Stdio& s = *streams[fd];
    if (p.child_ends[fd]) {  // a pipe's end, or a log opened by open_log
      posix_spawn_file_actions_adddup2(&actions, p.child_ends[fd].get(), fd);
    } else if (s.kind != Stdio::Kind::inherit) {
      const char* path = s.kind == Stdio::Kind::file ? s.path.c_str() : "/dev/null";
      posix_spawn_file_actions_addopen(&actions, fd, path, open_flags(fd), 0644);
    }
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  short flags = POSIX_SPAWN_SETSIGMASK;
  posix_spawnattr_setsigmask(&attr, &none);
  if (o.own_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  if (o.default_signals) {
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sigismember(&ignored_at_start(), sig) == 1) sigdelset(&all, sig);
    }
    posix_spawnattr_setsigdefault(&attr, &all);
    flags |= POSIX_SPAWN_SETSIGDEF;
  }
  posix_spawnattr_setflags(&attr, flags);
  pid_t pid = -1;
  const int rc =
      posix_spawn(&pid, p.program.c_str(), &actions, &attr, p.argv.data(), p.envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw SpawnError(SpawnError::Step::exec, rc, "cannot start " + o.argv[0]);
  return pid;
}

// What a forked child that could not get to its program tells the parent.
struct ChildFailure {
  int step = 0;
  int err = 0;
};

[[noreturn]] void fail_in_child(int report_fd, SpawnError::Step step) {
  const ChildFailure f{static_cast<int>(step), errno};
  (void)!::write(report_fd, &f, sizeof f);
  ::_exit(127);
}

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void child_after_fork(const ChildOptions& o, const Prepared& p, pid_t parent,
                                   int report_fd) {
  // The parent died before the request took effect: nobody waits for this child.
  if (o.die_with_parent && !die_with_parent(parent)) ::_exit(127);
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    // A handler of the parent's must not run here; an ignored signal stays ignored unless
    // every signal is to be at its default, and one ignored when orch started stays ignored
    // even then.
    if (o.default_signals && sigismember(&ignored_at_start(), sig) == 1) {
      if (old.sa_handler != SIG_IGN) ::signal(sig, SIG_IGN);
    } else if (o.default_signals ? old.sa_handler != SIG_DFL
                                 : old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
      ::signal(sig, SIG_DFL);
    }
  }
  if (o.own_group) ::setpgid(0, 0);
  const Stdio* streams[3] = {&o.in, &o.out, &o.err};
  for (int fd = 0; fd < 3; ++fd) {
    const Stdio& s = *streams[fd];
    if (p.child_ends[fd]) {
      ::dup2(p.child_ends[fd].get(), fd);  // dup2 clears O_CLOEXEC on the copy
    } else if (s.kind != Stdio::Kind::inherit) {
      const char* path = s.kind == Stdio::Kind::file ? s.path.c_str() : "/dev/null";
      const int opened = ::open(path, open_flags(fd), 0644);
      if (opened < 0) fail_in_child(report_fd, SpawnError::Step::open);
      if (opened != fd) {
        ::dup2(opened, fd);
        ::close(opened);
      }
    }
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(p.program.c_str(), p.argv.data(), p.envp.data());
  fail_in_child(report_fd, SpawnError::Step::exec);
}

pid_t with_fork(const ChildOptions& o, const Prepared& p) {
  Pipe report;
  try {
    report = make_pipe();
  } catch (const std::system_error& e) {
    throw SpawnError(SpawnError::Step::pipe, e.code().value(), "cannot make a pipe");
  }
  // No signal handler of ours runs in the child before it has reset them.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) child_after_fork(o, p, parent, report.write.get());
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) throw SpawnError(SpawnError::Step::fork, fork_errno, "cannot fork");
  report.write.reset();
  ChildFailure f;
  ssize_t n;
  do n = ::read(report.read.get(), &f, sizeof f);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof f)) return pid;  // closed by the exec: started
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  const auto step = static_cast<SpawnError::Step>(f.step);
  throw SpawnError(step, f.err,
                   step == SpawnError::Step::open ? "cannot open a standard stream of " + o.argv[0]
                                                  : "cannot start " + o.argv[0]);
}

}  // namespace

Spawned spawn(const ChildOptions& options) {
  Prepared p;
  prepare(options, p);
  Spawned s;
  s.pid = options.die_with_parent ? with_fork(options, p) : with_posix_spawn(options, p);
  s.in = std::move(p.parent_ends[0]);
  s.out = std::move(p.parent_ends[1]);
  s.err = std::move(p.parent_ends[2]);
  return s;  // the child's ends close with `p`
}

}  // namespace orch::process::detail
