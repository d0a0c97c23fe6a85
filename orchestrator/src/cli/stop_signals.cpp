#include "cli/stop_signals.h"

#include <csignal>

namespace orch::cli {
namespace {

using process::SignalGuard;

// A signal handler may only touch a lock-free atomic.
std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int) { g_stop_requested.store(true); }

bool clear_flag() {
  g_stop_requested.store(false);
  return true;
}

}  // namespace

// A signal the caller chose to ignore (`nohup` ignores SIGHUP, a shell ignores SIGINT for a
// background job) stays ignored, as the person who started orch asked; SIGTERM is how a
// scheduler asks any process to stop, and is always caught.
StopSignals::StopSignals()
    : cleared_(clear_flag()),
      int_(SIGINT, on_stop_signal, SignalGuard::WhenIgnored::keep),
      term_(SIGTERM, on_stop_signal, SignalGuard::WhenIgnored::replace),
      hup_(SIGHUP, on_stop_signal, SignalGuard::WhenIgnored::keep) {}

std::atomic<bool>& StopSignals::flag() { return g_stop_requested; }

}  // namespace orch::cli
