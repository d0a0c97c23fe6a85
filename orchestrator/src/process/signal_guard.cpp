#include "process/signal_guard.h"

namespace orch::process {

SignalGuard::SignalGuard(int sig, void (*handler)(int), WhenIgnored when_ignored) : sig_(sig) {
  ::sigaction(sig_, nullptr, &old_);
  if (when_ignored == WhenIgnored::keep && old_.sa_handler == SIG_IGN) return;
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  installed_ = ::sigaction(sig_, &sa, nullptr) == 0;
}

SignalGuard::~SignalGuard() {
  if (installed_) ::sigaction(sig_, &old_, nullptr);
}

}  // namespace orch::process
