// A signal handler for a scope: installed when the guard is made, the previous disposition put
// back when it goes, whatever path leaves the scope.
#pragma once

#include <csignal>

namespace orch::process {

class SignalGuard {
 public:
  /// What to do when the signal is ignored as the guard is made: replace the ignoring, or keep
  /// it (whoever started the process asked for it: `nohup` ignores SIGHUP, a shell ignores
  /// SIGINT for a background job).
  enum class WhenIgnored { replace, keep };

  /// Installs `handler` for `sig` (an empty sa_mask, no flags).
  SignalGuard(int sig, void (*handler)(int), WhenIgnored when_ignored = WhenIgnored::replace);
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

  /// false when the signal was ignored and kept so.
  bool installed() const { return installed_; }

 private:
  int sig_;
  bool installed_ = false;
  struct sigaction old_ {};
};

}  // namespace orch::process
