// The doctor's findings `orch sweep` prints before its first run: only those that change the
// numbers, errors and warnings alike.
#include <catch2/catch.hpp>

#include "telemetry/sweep_warnings.h"

namespace orch {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("sweep warnings: only the findings that change numbers", "[telemetry][doctor]") {
  const std::vector<Finding> findings = {
      {Severity::kOk, "launch_blocking", "CUDA_LAUNCH_BLOCKING is not set", ""},
      {Severity::kError, "launch_blocking", "CUDA_LAUNCH_BLOCKING=1: every launch waits", "x"},
      {Severity::kWarning, "gpu", "no GPU visible", "x"},
      {Severity::kWarning, "nvml", "NVML unavailable", "x"},
      {Severity::kWarning, "persistence", "cuda:0: persistence mode is off", "x"},
      {Severity::kWarning, "pcie", "cuda:0: PCIe link runs at gen3 x16 while idle", "x"},
      {Severity::kError, "processes", "cuda:0: in use by 1 other process(es)", "x"},
      {Severity::kOk, "versions", "orch 0.1.0", ""}};
  const auto w = number_changing_warnings(findings);
  REQUIRE(w.size() == 4);
  CHECK(w[0] == "error launch_blocking: CUDA_LAUNCH_BLOCKING=1: every launch waits");
  CHECK(w[1] == "warning persistence: cuda:0: persistence mode is off");
  CHECK_THAT(w[2], Contains("warning pcie:") && Contains("while idle"));
  CHECK_THAT(w[3], Contains("error processes:"));
  CHECK(number_changing_warnings({findings[0], findings[2], findings[7]}).empty());
}

}  // namespace
}  // namespace orch
