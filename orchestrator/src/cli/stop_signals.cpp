#include "cli/stop_signals.h"

#include <signal.h>

#include <csignal>

namespace orch::cli {
namespace {

using process::SignalGuard;

// A signal handler may only touch a lock-free atomic.
std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int) { g_stop_requested.store(true); }

// How many StopSignals are alive. A command holds one from its start to its end and the steps
// inside it (waiting for a device, the runs) hold their own: only the outermost clears the flag,
// so a signal that came before an inner step began still stops it.
int g_depth = 0;

bool enter() {
  if (g_depth++ == 0) g_stop_requested.store(false);
  return true;
}

}  // namespace

// A signal the caller chose to ignore (`nohup` ignores SIGHUP, a shell ignores SIGINT for a
// background job) stays ignored, as the person who started orch asked; SIGTERM is how a
// scheduler asks any process to stop, and is always caught.
StopSignals::StopSignals()
    : cleared_(enter()),
      int_(SIGINT, on_stop_signal, SignalGuard::WhenIgnored::keep),
      term_(SIGTERM, on_stop_signal, SignalGuard::WhenIgnored::replace),
      hup_(SIGHUP, on_stop_signal, SignalGuard::WhenIgnored::keep) {}

StopSignals::~StopSignals() { --g_depth; }

std::atomic<bool>& StopSignals::flag() { return g_stop_requested; }

void hold_stop_signals_until_exit() {
  sigset_t set;
  sigemptyset(&set);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  (void)::sigprocmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace orch::cli
