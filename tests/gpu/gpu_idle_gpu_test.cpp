// The GPU's idle time for want of a batch, measured on a real GPU, and the diagnosis built on
// it: a loader slowed on purpose (synthetic's `delay_ms`) leaves the GPU idle under the eager
// `default` stream and under `cuda-graph`, and is input-bound in both; a fast loader is not,
// whichever stream strategy runs; and a loader slower than the host but faster than the GPU
// makes the host wait while a replayed graph keeps the GPU busy, which the host's own split
// called input-bound and the GPU's figure does not.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "analysis/diagnosis.h"
#include "integration/test_support.h"
#include "runner/runner.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

// A step long enough on any recent GPU (ResNet18 at 224x224, batch 128: several ms) that a
// host delay shorter than the step is well above the sleep's and the timers' resolution.
RunSpec idle_spec(const std::string& strategy, double delay_ms) {
  RunSpec spec = test::small_cpu_spec();
  spec.device = "cuda";
  spec.batch_size = 128;
  spec.warmup_steps = 5;
  spec.measure_steps = 30;
  spec.optimizer.lr = 0.01;
  spec.stream = test::choice(strategy);
  if (strategy == "cuda-graph") spec.stream.params.set("warmup_steps", std::int64_t{3});
  if (strategy == "multi-stream") spec.stream.params.set("streams", std::int64_t{2});
  spec.data.params.set("image_size", std::int64_t{224});
  spec.data.params.set("batches", std::int64_t{2});
  spec.data.params.set("delay_ms", delay_ms);
  return spec;
}

struct IdleRun {
  nlohmann::json doc;
  double step_ms = 0, device_step_ms = 0, wait_ms = 0, idle_ms = 0, idle_share = 0;
  std::string label, detail;
};

IdleRun run_idle(const std::string& strategy, double delay_ms) {
  IdleRun r;
  r.doc = run_one(idle_spec(strategy, delay_ms), test::built_plugins());
  INFO(strategy << ", delay " << delay_ms << " ms: " << r.doc.dump(1).substr(0, 4000));
  REQUIRE(r.doc["status"] == "ok");
  const auto& m = r.doc["metrics"];
  REQUIRE(m.contains("gpu_idle_ms_mean"));
  REQUIRE(m.contains("gpu_idle_share"));
  r.step_ms = m["step_ms_mean"].get<double>();
  r.device_step_ms = m["device_step_ms_mean"].get<double>();
  r.wait_ms = m["data_wait_ms_mean"].get<double>();
  r.idle_ms = m["gpu_idle_ms_mean"].get<double>();
  r.idle_share = m["gpu_idle_share"].get<double>();
  CHECK(r.idle_share == Approx(r.idle_ms / r.step_ms));
  // Every measured step has its own figure, none negative nor longer than the wall step.
  for (const auto& s : r.doc["steps"]) {
    REQUIRE(s.contains("gpu_idle_ms"));
    CHECK(s["gpu_idle_ms"].get<double>() >= 0);
  }
  CHECK(r.idle_ms <= r.step_ms);
  const auto d = analysis::diagnose(r.doc);
  REQUIRE(d);
  r.label = d->label;
  r.detail = d->detail;
  return r;
}

}  // namespace

TEST_CASE("a fast loader leaves the GPU busy under every stream strategy: not input-bound",
          "[gpu][diagnosis]") {
  for (const char* strategy : {"default", "copy-overlap", "multi-stream", "cuda-graph"}) {
    const IdleRun r = run_idle(strategy, 0);
    INFO(strategy << ": " << r.label << ": " << r.detail);
    CHECK(r.idle_share < analysis::kInputBoundIdleShare);
    CHECK(r.label != "input-bound");
    CHECK_THAT(r.detail, Contains("host data wait"));
  }
}

TEST_CASE("a loader slowed on purpose is input-bound under default and cuda-graph",
          "[gpu][diagnosis]") {
  for (const char* strategy : {"default", "cuda-graph"}) {
    // Four times the GPU's own step (from a run with the fast loader), plus 10 ms: the GPU
    // finishes each step long before the next batch arrives.
    const double gpu_step = run_idle(strategy, 0).device_step_ms;
    const double delay = 4 * gpu_step + 10;
    const IdleRun r = run_idle(strategy, delay);
    INFO(strategy << ": GPU step " << gpu_step << " ms, delay " << delay << " ms: " << r.label
                  << ": " << r.detail);
    CHECK(r.label == "input-bound");
    CHECK_THAT(r.detail, Contains("waiting for input (host data wait"));
    CHECK(r.wait_ms >= delay);
    // The GPU waits for the delay less what it still had queued when the wait began (at
    // most one step), against a wall step of the delay plus the host's launches.
    CHECK(r.idle_share > 0.5);
    CHECK(r.idle_ms >= delay - 2 * gpu_step);
  }
}

TEST_CASE("under cuda-graph the host may wait for the loader while the GPU stays busy",
          "[gpu][diagnosis]") {
  // A loader slower than the host's replay but faster than the GPU: the host spends 40% of
  // each step waiting, yet the replays it queued keep the GPU busy, idle only at the first
  // measured step (it starts synchronised). The host's split alone would say input-bound.
  const double gpu_step = run_idle("cuda-graph", 0).device_step_ms;
  const IdleRun r = run_idle("cuda-graph", 0.4 * gpu_step);
  INFO("GPU step " << gpu_step << " ms: " << r.label << ": " << r.detail);
  CHECK(r.wait_ms / r.step_ms > analysis::kInputBoundWaitShare);
  CHECK(r.idle_share < analysis::kInputBoundIdleShare);
  CHECK(r.label != "input-bound");
  CHECK_THAT(r.detail, Contains("the host waited for the loader while the GPU worked through "
                                "queued steps"));
}
