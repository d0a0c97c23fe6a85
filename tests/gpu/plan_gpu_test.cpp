// Plan-time checks on a machine with a GPU: what the CPU suite refuses for want of one
// (tests/integration/cli_plan_check_test.cpp) plans here, and an index past the visible GPUs is
// still refused.
#include <c10/cuda/CUDAFunctions.h>

#include <catch2/catch.hpp>
#include <string>

#include "plan/planner.h"
#include "plugin_host/registry.h"

namespace orch {
namespace {

TEST_CASE("plan: device cuda and cuda-graph plan where a GPU is visible", "[plan]") {
  PluginRegistry registry;
  registry.load_directories({ORCH_PLUGIN_BUILD_DIR});
  PlanOptions o;
  o.machine = MachineFacts{static_cast<int>(c10::cuda::device_count())};
  REQUIRE(o.machine->visible_gpus > 0);
  const std::string yaml =
      "name: gpu\nbase:\n  device: cuda\n  batch_size: 8\n  stream: cuda-graph\n"
      "  precision: {plugin: amp, dtype: fp16}\n  optimizer: {impl: fused}\n";
  CHECK(make_plan_from_string(yaml, "gpu.yaml", registry, o).runs.size() == 1);
  const std::string past =
      "name: gpu\nbase:\n  device: cuda:" + std::to_string(o.machine->visible_gpus) + "\n";
  try {
    make_plan_from_string(past, "gpu.yaml", registry, o);
    FAIL("a device index past the visible GPUs planned");
  } catch (const PlanErrors& e) {
    CHECK(e.key_path == "base.device");
    CHECK_THAT(e.message, Catch::Contains("is not visible on this machine"));
  }
}

}  // namespace
}  // namespace orch
