#include "process/child.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <set>
#include <thread>

#include "process/spawn.h"

namespace orch::process {
namespace {

// The pids of this process's Child objects not yet reaped. Guarded by one mutex held from the
// spawn to the insertion, so the subreaper never sees a child started a moment ago as
// somebody's leftover.
std::mutex g_live_mutex;
std::set<pid_t> g_live;

}  // namespace

bool is_live_child(pid_t pid) {
  std::lock_guard lock(g_live_mutex);
  return g_live.count(pid) > 0;
}

Child::Child(const ChildOptions& options) : own_group_(options.own_group) {
  std::lock_guard lock(g_live_mutex);
  detail::Spawned s = detail::spawn(options);
  pid_ = s.pid;
  in_ = std::move(s.in);
  out_ = std::move(s.out);
  err_ = std::move(s.err);
  g_live.insert(pid_);
}

Child::Child(Child&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      own_group_(o.own_group_),
      in_(std::move(o.in_)),
      out_(std::move(o.out_)),
      err_(std::move(o.err_)),
      status_(o.status_) {}

Child::~Child() {
  if (!status_ && pid_ > 0) {
    signal_group(SIGKILL);
    wait();
  }
}

void Child::reaped(int wait_status) {
  status_ = decode_wait_status(wait_status);
  std::lock_guard lock(g_live_mutex);
  g_live.erase(pid_);
}

std::optional<ExitStatus> Child::poll() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  pid_t r;
  do r = ::waitpid(pid_, &status, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == pid_) {
    reaped(status);
  } else if (r < 0) {
    // Reaped by someone else (a waitpid(-1) elsewhere): its status is lost, not pending.
    status_ = ExitStatus{};
    std::lock_guard lock(g_live_mutex);
    g_live.erase(pid_);
  }
  return status_;
}

ExitStatus Child::wait() {
  if (status_ || pid_ <= 0) return status_.value_or(ExitStatus{});
  int status = 0;
  pid_t r;
  do r = ::waitpid(pid_, &status, 0);
  while (r < 0 && errno == EINTR);
  if (r == pid_) {
    reaped(status);
  } else {
    status_ = ExitStatus{};
    std::lock_guard lock(g_live_mutex);
    g_live.erase(pid_);
  }
  return *status_;
}

std::optional<ExitStatus> Child::wait_for(std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  // waitpid has no timeout: polled, the first few times soon after one another (a child told to
  // stop usually goes at once), then every 10 ms.
  auto nap = std::chrono::milliseconds(1);
  for (;;) {
    if (auto s = poll()) return s;
    const auto now = Clock::now();
    if (now >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::min<Clock::duration>(nap, deadline - now));
    nap = std::min(nap * 2, std::chrono::milliseconds(10));
  }
}

void Child::signal(int sig) {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

void Child::signal_group(int sig) {
  if (pid_ <= 0 || status_) return;
  if (!own_group_ || ::kill(-pid_, sig) != 0) ::kill(pid_, sig);  // group gone: the child alone
}

ExitStatus Child::stop(std::chrono::milliseconds grace) {
  if (status_) return *status_;
  signal_group(SIGTERM);
  if (auto s = wait_for(grace)) return *s;
  signal_group(SIGKILL);
  return wait();
}

}  // namespace orch::process
