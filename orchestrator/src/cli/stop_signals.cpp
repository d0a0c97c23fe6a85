#include "cli/stop_signals.h"

namespace orch::cli {
namespace {

// A signal handler may only touch a lock-free atomic.
std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int) { g_stop_requested.store(true); }

// Installs `sa` for `sig`, keeping the previous disposition in `old`; a signal the caller
// chose to ignore (`nohup` ignores SIGHUP, a shell ignores SIGINT for a background job) stays
// ignored, as the person who started orch asked.
void install(int sig, const struct sigaction& sa, struct sigaction* old) {
  sigaction(sig, nullptr, old);
  if (sig != SIGTERM && old->sa_handler == SIG_IGN) return;
  sigaction(sig, &sa, nullptr);
}

}  // namespace

StopSignals::StopSignals() {
  g_stop_requested.store(false);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  install(SIGINT, sa, &old_int_);
  install(SIGTERM, sa, &old_term_);
  install(SIGHUP, sa, &old_hup_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
}

std::atomic<bool>& StopSignals::flag() { return g_stop_requested; }

}  // namespace orch::cli
