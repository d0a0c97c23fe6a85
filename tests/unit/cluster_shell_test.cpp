// run_capture, the Slurm client's way of calling sbatch, squeue and sacct: the whole output comes
// back when a signal that orch catches (SIGHUP while following a job) arrives during the read,
// and a command that hangs is stopped at its timeout, saying so.
#include <pthread.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <thread>

#include "cluster/shell.h"
#include "process/signal_guard.h"

namespace orch {
namespace {

volatile std::sig_atomic_t g_caught = 0;
void note_signal(int) { g_caught = g_caught + 1; }

}  // namespace

TEST_CASE("cluster: run_capture keeps the whole output through a caught signal",
          "[cluster][process]") {
  // A handler without SA_RESTART, as StopSignals installs: a blocking read returns EINTR.
  const process::SignalGuard guard(SIGUSR1, note_signal);
  g_caught = 0;
  const pthread_t self = pthread_self();
  std::thread sender([self] {
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
      pthread_kill(self, SIGUSR1);
    }
  });
  const auto r = cluster::run_capture({"sh", "-c", "sleep 0.5; echo '7_0 RUNNING'"});
  sender.join();
  CHECK(g_caught == 5);
  CHECK(r.exit_code == 0);
  CHECK(r.output == "7_0 RUNNING\n");
}

TEST_CASE("cluster: run_capture stops a command that outlives its timeout", "[cluster][process]") {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r =
      cluster::run_capture({"sh", "-c", "echo started; sleep 30"}, std::chrono::milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.exit_code == -1);
  CHECK(r.output.rfind("started\n", 0) == 0);
  CHECK(r.output.find("sh gave no answer within 300 ms") != std::string::npos);
  CHECK(took < std::chrono::seconds(10));
}

TEST_CASE("cluster: run_capture reports exit codes and a program that cannot start",
          "[cluster][process]") {
  const auto failed = cluster::run_capture({"sh", "-c", "echo no >&2; exit 3"});
  CHECK(failed.exit_code == 3);
  CHECK(failed.output == "no\n");
  const auto missing = cluster::run_capture({"orch-no-such-program-xyz"});
  CHECK(missing.exit_code != 0);
}

}  // namespace orch
