// posix_spawn rather than fork: the parent may have LibTorch and CUDA libraries mapped, and
// glibc's posix_spawn uses a vfork-style clone that copies no page tables and runs no atfork
// handlers in the child.
#include "sweep/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <set>
#include <system_error>

extern char** environ;

namespace orch::sweep {
namespace {

ExitStatus from_wait_status(int status) {
  ExitStatus s;
  if (WIFEXITED(status))
    s.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    s.signal = WTERMSIG(status);
  return s;
}

}  // namespace

std::string ExitStatus::describe() const {
  if (signal == 0) return "exit code " + std::to_string(exit_code);
  const char* abbrev = sigabbrev_np(signal);
  return "signal " + std::to_string(signal) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
}

ChildProcess::ChildProcess(const ChildOptions& options) {
  if (options.argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
  // The environment: the parent's, minus what is unset or replaced, plus the overrides.
  std::set<std::string> drop(options.unset_env.begin(), options.unset_env.end());
  for (const auto& [k, v] : options.env) drop.insert(k);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    if (!drop.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // No O_CLOEXEC: glibc closes the target descriptor before opening, so the file usually gets
  // that very number and would be closed again by the exec (the run's logs stayed empty).
  const int flags = O_WRONLY | O_CREAT | O_TRUNC;
  posix_spawn_file_actions_addopen(
      &actions, STDOUT_FILENO,
      options.stdout_path.empty() ? "/dev/null" : options.stdout_path.c_str(), flags, 0644);
  posix_spawn_file_actions_addopen(
      &actions, STDERR_FILENO,
      options.stderr_path.empty() ? "/dev/null" : options.stderr_path.c_str(), flags, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout kills whatever the run started too; default signal
  // dispositions and an empty mask, whatever the parent installed for itself.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const int rc = posix_spawn(&pid_, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    throw std::system_error(rc, std::generic_category(), "cannot start " + options.argv[0]);
}

ChildProcess::~ChildProcess() {
  if (!status_ && pid_ > 0) {
    signal_group(SIGKILL);
    wait();
  }
}

std::optional<ExitStatus> ChildProcess::poll() {
  if (status_) return status_;
  int status = 0;
  pid_t r;
  do r = waitpid(pid_, &status, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == pid_) status_ = from_wait_status(status);
  return status_;
}

ExitStatus ChildProcess::wait() {
  if (status_) return *status_;
  int status = 0;
  pid_t r;
  do r = waitpid(pid_, &status, 0);
  while (r < 0 && errno == EINTR);
  status_ = r == pid_ ? from_wait_status(status) : ExitStatus{};
  return *status_;
}

void ChildProcess::signal_group(int sig) {
  if (pid_ <= 0 || status_) return;
  if (::kill(-pid_, sig) != 0) ::kill(pid_, sig);  // group gone already: the child alone
}

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(max_bytes)
                                   ? size - static_cast<std::streamoff>(max_bytes)
                                   : 0;
  in.seekg(start);
  std::string text(static_cast<std::size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (start > 0) {
    const auto nl = text.find('\n');
    if (nl != std::string::npos && nl + 1 < text.size()) text.erase(0, nl + 1);
  }
  return text;
}

}  // namespace orch::sweep
