// `orch health-check --device cuda:0` (hidden): what `orch sweep` runs in a fresh process before
// it retires a GPU whose runs kept failing with device errors. Allocates, launches a kernel and
// synchronises; exit 0 and one line on stdout when the device works, exit 1 and the error on
// stderr when it does not.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "runner/device_health.h"

namespace orch::cli {

namespace {

struct HealthCheckArgs {
  std::string device = "cpu";
};

// An unhealthy device is this command's answer, not a failure of it: exit 1 and the reason.
int run_health_check(const HealthCheckArgs& a, const GlobalOptions& /*g*/) {
  // Tests cannot break a GPU on purpose: this forces the verdict a broken one would give.
  if (const char* forced = std::getenv("ORCH_TEST_HEALTH_CHECK");
      forced && std::string(forced) == "fail") {
    std::cerr << "orch health-check: " << a.device
              << ": unhealthy (forced by ORCH_TEST_HEALTH_CHECK=fail)\n";
    return kExitRunFailed;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (auto fault = device_fault(a.device)) {
    std::cerr << "orch health-check: " << a.device << ": unhealthy: " << *fault << "\n";
    return kExitRunFailed;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << a.device << " works: allocated, ran a kernel and synchronised in "
            << std::to_string(s).substr(0, 4) << " s\n";
  return kExitOk;
}

}  // namespace

void add_health_check_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "health-check", "check that a device works: allocate, launch a kernel, synchronise");
  cmd->group("");  // an internal command of `orch sweep`, not listed in --help
  auto a = std::make_shared<HealthCheckArgs>();
  cmd->add_option("--device", a->device, "cpu or cuda:N")->capture_default_str();
  cmd->callback([&g, &exit_code, a] { exit_code = run_health_check(*a, g); });
}

}  // namespace orch::cli
