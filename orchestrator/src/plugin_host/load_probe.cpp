// The load probe: fork, load the library in the child, report through a pipe. A fork rather
// than running the orch executable again, because the registry is also used by the test
// suites and any host program: the child already has LibTorch and everything else mapped, so
// loading a plugin there costs about what it costs in the parent.
#include "plugin_host/load_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

#include "plugin_host/plugin_error.h"
#include "plugin_host/plugin_library.h"

namespace orch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kLoaded = 'L';
constexpr std::size_t kStderrKept = 4096;

// Runs in the child only; never returns.
[[noreturn]] void child(const std::filesystem::path& path, int status_fd, int stderr_fd) {
  // A parent killed by Ctrl-C or a timeout of its own must not leave a hanging child behind.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent's handlers (a sweep's stop flag, a crash reporter) would turn a crash into
  // something else; the verdict is read from the child's raw exit status.
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    std::signal(sig, SIG_DFL);
  }
  // Output that the real load prints is not printed twice; input is not taken from the user.
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull >= 0) {
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(devnull, STDOUT_FILENO);
  }
  ::dup2(stderr_fd, STDERR_FILENO);
  try {
    // Kept loaded on purpose: unloading would run the library's static destructors, which are
    // not load-time code and are the parent's concern when it exits.
    static const auto* kept = new PluginLibrary(load_plugin_library(path));
    (void)kept;
  } catch (const PluginError&) {
    // Refused by the loader's own checks: loading it did no harm, and the parent will refuse
    // it again with the same words.
  } catch (...) {
  }
  const char ok = kLoaded;
  ssize_t n;
  do n = ::write(status_fd, &ok, 1);
  while (n < 0 && errno == EINTR);
  ::_exit(0);  // no atexit handlers, no static destructors: they belong to the parent
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "unknown signal";
}

// Signals that the library's code raises itself, so loading it again would raise them again.
bool deterministic(int sig) {
  switch (sig) {
    case SIGSEGV:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
    case SIGABRT:
    case SIGTRAP:
    case SIGSYS:
      return true;
    default:
      return false;
  }
}

// The last non-empty line of what the child wrote on stderr, printable, at most 200 bytes:
// "terminate called after throwing ...", an assertion, a sanitizer's summary.
std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return {};
  std::size_t begin = text.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  std::string line = text.substr(begin, end + 1 - begin);
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return line;
}

std::string seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

// Reads what is available on `fd`; returns false at end of file (or an error).
bool drain(int fd, std::string& into, std::size_t keep) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      if (into.size() > keep) into.erase(0, into.size() - keep);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    return false;
  }
}

class Pipe {
 public:
  Pipe() {
    if (::pipe2(fd_, O_CLOEXEC) != 0) throw PluginError(std::strerror(errno));
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int read_end() const { return fd_[0]; }
  int write_end() const { return fd_[1]; }
  void close_read() { close(0); }
  void close_write() { close(1); }

 private:
  void close(int i) {
    if (fd_[i] >= 0) ::close(fd_[i]);
    fd_[i] = -1;
  }
  int fd_[2] = {-1, -1};
};

// Fails closed: a library that cannot be vetted in a child process is not loaded (one that
// crashes the command is what the probe exists to stop), and the verdict is not remembered:
// the next command may have the descriptors or processes to spare.
LoadProbeVerdict not_vetted(const std::string& why) {
  LoadProbeVerdict v;
  v.safe = false;
  v.cacheable = false;
  v.reason = std::string(kNotVettedText) + " (" + why + "), so it is not loaded";
  return v;
}

// How the probing child ended: what it said on its status pipe and stderr, its wait status,
// and whether it was killed at the timeout.
struct ChildEnd {
  std::string said, stderr_text;
  int wstatus = 0;
  bool timed_out = false;
};

ChildEnd follow_child(pid_t pid, Pipe& status, Pipe& err, std::chrono::milliseconds timeout) {
  for (int fd : {status.read_end(), err.read_end()}) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  const auto deadline = Clock::now() + timeout;
  ChildEnd end;
  bool status_open = true, err_open = true;
  for (;;) {
    if (::waitpid(pid, &end.wstatus, WNOHANG) == pid) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &end.wstatus, 0) < 0 && errno == EINTR) {
      }
      end.timed_out = true;
      break;
    }
    // Wake up when the child writes or closes its pipes (it exits); when both are closed,
    // check on it every few milliseconds (it may have closed them and gone on running).
    pollfd fds[2];
    nfds_t n = 0;
    if (status_open) fds[n++] = {status.read_end(), POLLIN, 0};
    if (err_open) fds[n++] = {err.read_end(), POLLIN, 0};
    const int wait_ms = static_cast<int>(std::min<long long>(left.count(), n > 0 ? 100 : 5));
    ::poll(fds, n, wait_ms);
    if (status_open) status_open = drain(status.read_end(), end.said, 16);
    if (err_open) err_open = drain(err.read_end(), end.stderr_text, kStderrKept);
  }
  drain(status.read_end(), end.said, 16);
  drain(err.read_end(), end.stderr_text, kStderrKept);
  return end;
}

LoadProbeVerdict verdict_of(const ChildEnd& end, std::chrono::milliseconds timeout) {
  LoadProbeVerdict v;
  const std::string words = last_line(end.stderr_text);
  const std::string quoted = words.empty() ? "" : "; its last line on stderr: \"" + words + "\"";
  const bool loaded = end.said.find(kLoaded) != std::string::npos;
  if (end.timed_out && !loaded) {
    // Remembered for this file, like a crash: otherwise every later command, and every run's
    // child of a sweep, would wait the whole timeout again for the same library. The reason says
    // how to have it probed again.
    v.safe = false;
    v.reason = "its load-time code did not finish within " + seconds(timeout) +
               " and was killed (ORCH_PLUGIN_PROBE_TIMEOUT sets the limit, in seconds; the "
               "verdict is remembered until the library changes or the probe cache, "
               "ORCH_PLUGIN_PROBE_CACHE, is removed)" +
               quoted;
    return v;
  }
  if (loaded) return v;  // loaded; how the child ended is moot
  v.safe = false;
  const int wstatus = end.wstatus;
  if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    v.cacheable = deterministic(sig);
    v.reason = "its load-time code was killed by signal " + std::to_string(sig) + " (" +
               signal_name(sig) + ")" + quoted;
  } else if (WIFEXITED(wstatus)) {
    v.reason = "its load-time code called exit(" + std::to_string(WEXITSTATUS(wstatus)) +
               ") while loading" + quoted;
  } else {
    v.cacheable = false;
    v.reason = "its load probe ended with wait status " + std::to_string(wstatus);
  }
  return v;
}

}  // namespace

LoadProbeVerdict probe_load_in_child(const std::filesystem::path& path,
                                     std::chrono::milliseconds timeout) {
  std::optional<Pipe> status, err;
  try {
    status.emplace();
    err.emplace();
  } catch (const PluginError& e) {
    return not_vetted(e.what());  // out of file descriptors
  }
  // Whatever sits in the stdio buffers would be written a second time by a child whose
  // load-time code calls exit().
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    // A process limit (ulimit -u, a cgroup's pids.max) must not let an unvetted library in.
    const int why = errno;
    return not_vetted(
        std::string("fork: ") + std::strerror(why) +
        (why == EAGAIN ? "; a process limit such as ulimit -u or a cgroup's pids.max" : ""));
  }
  if (pid == 0) child(path, status->write_end(), err->write_end());
  status->close_write();
  err->close_write();
  return verdict_of(follow_child(pid, *status, *err, timeout), timeout);
}

}  // namespace orch
