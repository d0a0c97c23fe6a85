// One run end to end on the CPU: the loop trains (the loss falls on a fixed batch), the result
// document carries what the store and the ranking need, and failures become outcomes.
#include "runner/runner.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "analysis/diagnosis.h"
#include "integration/test_support.h"
#include "result/run_phases.h"
#include "runner/steady_steps.h"
#include "telemetry/process_age.h"

using namespace orch;

TEST_CASE("fp32 training on a fixed batch lowers the loss", "[runner]") {
  RunSpec spec = test::small_cpu_spec();
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  const auto& m = doc["metrics"];
  CHECK(m["loss_last"].get<double>() < 0.5 * m["loss_first"].get<double>());
  CHECK(m["images_per_s"].get<double>() > 0);
  CHECK(doc["steps"].size() == 12);
  CHECK(doc["device"] == "cpu");
  CHECK(doc["run"]["hash"] == spec.hash);
}

TEST_CASE("amp bf16 training on the CPU lowers the loss too", "[runner]") {
  RunSpec spec = test::small_cpu_spec();
  spec.precision = test::choice("amp", {{"dtype", std::string("bf16")}});
  spec.memory_format = "channels_last";
  // fp32's lr 0.05 overshoots in bf16 on some CPUs' kernels (on an AMD EPYC the loss rose from
  // 2.0 to 5.4 in 12 steps, the same with every orch revision); at 0.02 it falls as in fp32.
  spec.optimizer.lr = 0.02;
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["metrics"]["loss_last"].get<double>() <
        0.7 * doc["metrics"]["loss_first"].get<double>());
}

TEST_CASE("fp16 steps the loss scaler skips do not count as warm-up", "[runner][amp]") {
  // A start of 2^20 overflows fp16 gradients for a few steps; each halves the scale and skips
  // the optimizer. The warm-up must still contain two real optimizer steps (state allocated,
  // then one steady), so the first real step is never among the timed ones.
  RunSpec spec = test::small_cpu_spec();
  spec.precision = test::choice("amp", {{"dtype", std::string("fp16")},
                                        {"init_scale", 1048576.0},
                                        {"growth_interval", std::int64_t{2000}}});
  spec.optimizer.impl = "fused";
  spec.warmup_steps = 2;
  spec.measure_steps = 1;
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  const auto& m = doc["metrics"];
  const auto skipped = static_cast<std::int64_t>(m["skipped_steps"].get<double>());
  REQUIRE(skipped >= 1);  // else this start does not exercise the extension
  // Once the scale fits, nothing more is skipped (it grows again only after 2,000 clean steps),
  // so every skip was in the warm-up, which ran until two steps were real.
  CHECK(m["warmup_steps"].get<std::int64_t>() == spec.warmup_steps + skipped);
  CHECK(doc["counters"]["precision.loss_scale"].get<double>() == 1048576.0 / (1 << skipped));
}

TEST_CASE("without skipped steps the warm-up is the experiment's", "[runner]") {
  RunSpec spec = test::small_cpu_spec();
  spec.warmup_steps = 3;
  spec.measure_steps = 1;
  const auto doc = run_one(spec, test::built_plugins());
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["metrics"]["warmup_steps"].get<std::int64_t>() == 3);
  CHECK(doc["steps"].size() == 1);
}

TEST_CASE("warmup auto warms up until the step times are steady, or to the cap, and says which",
          "[runner][warmup]") {
  RunSpec spec = test::small_cpu_spec();
  spec.warmup_auto = true;
  spec.warmup_steps = kAutoWarmupMinSteps;
  spec.measure_steps = 2;
  const auto doc = run_one(spec, test::built_plugins());
  REQUIRE(doc["status"] == "ok");
  const auto& m = doc["metrics"];
  REQUIRE(m.contains("warmup_steady"));
  const auto steps = m["warmup_steps"].get<std::int64_t>();
  // The minimum, then at least a window of timed steps.
  CHECK(steps >= kAutoWarmupMinSteps + static_cast<std::int64_t>(SteadySteps::kWindow));
  if (m["warmup_steady"] == 1) {
    CHECK(steps < SteadySteps::kMaxSteps);
  } else {
    // A loaded machine's steps may never settle within 2%: then the cap ended it.
    CHECK((steps == SteadySteps::kMaxSteps ||
           m["warmup_s"].get<double>() >= SteadySteps::kMaxSeconds));
  }
  // A fixed warm-up says nothing of steadiness.
  RunSpec fixed = test::small_cpu_spec();
  fixed.measure_steps = 1;
  CHECK_FALSE(run_one(fixed, test::built_plugins())["metrics"].contains("warmup_steady"));
}

TEST_CASE("steady steps: the last five within 2% of their median", "[runner][warmup]") {
  SteadySteps s;
  // An autotuning step and a capture step, then steady ones.
  CHECK_FALSE(s.add(4.0));
  CHECK_FALSE(s.add(0.30));
  // Four settled steps and the capture step in the window: not yet.
  for (int i = 0; i < 4; ++i) CHECK_FALSE(s.add(i % 2 ? 0.101 : 0.100));
  CHECK(s.add(0.1005));  // the last five span 0.001 s, 1% of their median
  CHECK(s.steady());
  CHECK(s.times().size() == 7);
  SteadySteps jitter;
  for (int i = 0; i < 20; ++i) CHECK_FALSE(jitter.add(i % 2 ? 0.100 : 0.103));
  SteadySteps zero;
  for (int i = 0; i < 6; ++i) CHECK_FALSE(zero.add(0.0));
}

TEST_CASE("a run records its phases: start-up, set-up, warm-up, measured, after", "[runner]") {
  RunSpec spec = test::small_cpu_spec();
  spec.measure_steps = 2;
  const auto doc = run_one(spec, test::built_plugins());
  REQUIRE(doc["status"] == "ok");
  const auto phases = run_phases(doc["metrics"]);
  REQUIRE(phases.has_value());
  CHECK(phases->startup_s > 0);  // this test process started before the run
  CHECK(phases->setup_s > 0);    // the model was built
  CHECK(phases->warmup_s > 0);
  CHECK(phases->measure_s > 0);
  CHECK(phases->after_s >= 0);
  // Together they are no more than the process has lived (within 10 ms: the start-up comes
  // from the kernel's boot-time clock, the rest from the monotonic clock).
  CHECK(phases->inside_s() <= *process_age_s() + 0.01);
  // The next run in the same process starts up from the end of this one, not from exec.
  const auto second = run_phases(run_one(spec, test::built_plugins())["metrics"]);
  REQUIRE(second.has_value());
  CHECK(second->startup_s < phases->startup_s + 1.0);
  CHECK(second->startup_s < 1.0);
}

TEST_CASE("a failing run is an outcome with the reason, not an exception", "[runner]") {
  RunSpec spec = test::small_cpu_spec();
  spec.device = "cuda:7";  // never present on the CI machine, nor on one-GPU machines
  const auto doc = run_one(spec, test::built_plugins());
  CHECK(doc["status"] == "failed");
  CHECK(doc["error"].get<std::string>().find("cuda:7") != std::string::npos);
  CHECK_FALSE(doc.contains("metrics"));
}

TEST_CASE("on the CPU a slow loader is input-bound by the host's wait, with no GPU figure",
          "[runner][diagnosis]") {
  // The slow loader: synthetic's delay_ms, added after synthetic results were recorded, so
  // left out of the configuration hash at its default (0) and those results keep theirs.
  const PluginInfo* synthetic = test::built_plugins().find(PluginKind::kDataLoader, "synthetic");
  REQUIRE(synthetic != nullptr);
  const auto delay = std::find_if(synthetic->params.begin(), synthetic->params.end(),
                                  [](const ParamSpec& p) { return p.name == "delay_ms"; });
  REQUIRE(delay != synthetic->params.end());
  CHECK(delay->hash_exempt_at_default());
  CHECK(std::get<double>(delay->default_value) == 0.0);

  RunSpec spec = test::small_cpu_spec();
  spec.measure_steps = 2;
  // Far above a step of this small net on a CPU (a second or two on a loaded 2-core machine), so
  // the wait is most of the step whatever the machine's load.
  spec.data.params.set("delay_ms", 3000.0);
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  const auto& m = doc["metrics"];
  CHECK(m["data_wait_ms_mean"].get<double>() >= 3000);
  // No CUDA events on the CPU: the GPU's idle time is absent, not zero.
  CHECK_FALSE(m.contains("gpu_idle_ms_mean"));
  CHECK_FALSE(m.contains("gpu_idle_share"));
  CHECK_FALSE(doc["steps"][0].contains("gpu_idle_ms"));
  const auto d = analysis::diagnose(doc);
  REQUIRE(d);
  CHECK(d->label == "input-bound");
  CHECK_THAT(d->detail, Catch::Matchers::StartsWith("data wait "));
  CHECK_THAT(d->detail, !Catch::Matchers::Contains("GPU idle"));
}

TEST_CASE("cudnn_benchmark auto is on only for shapes that are multiples of 8", "[runner]") {
  CHECK(cudnn_benchmark_enabled("auto", 256, {8, 224, 224}));
  CHECK_FALSE(cudnn_benchmark_enabled("auto", 256, {3, 224, 224}));
  CHECK_FALSE(cudnn_benchmark_enabled("auto", 100, {8, 224, 224}));
  CHECK_FALSE(cudnn_benchmark_enabled("auto", 256, {8, 225, 224}));
  CHECK(cudnn_benchmark_enabled("on", 3, {3, 5, 7}));
  CHECK_FALSE(cudnn_benchmark_enabled("off", 256, {8, 224, 224}));
}
