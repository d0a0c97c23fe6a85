// `profile: {steps: N}` on a real GPU: Kineto records CUDA activity (CUPTI) beside the host's
// operators, so a profiled ResNet run has kernels per step, a GPU busy share in (0, 1] and top
// kernels; the trace holds kernel events; the store keeps the summary and the diagnosis cites
// the trace.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "integration/test_support.h"
#include "runner/runner.h"
#include "storage/store.h"

using namespace orch;
namespace fs = std::filesystem;

namespace {

RunSpec profiled_gpu_spec(const std::string& stream) {
  RunSpec spec = test::small_cpu_spec();  // ResNet18, 32x32, batch 8: small, many short kernels
  spec.device = "cuda";
  spec.precision = test::choice("amp", {{"dtype", std::string("bf16")}});
  spec.stream = test::choice(stream);
  spec.warmup_steps = 4;
  // The graph is captured after these steps of warm-up, so the profiled steps replay it.
  if (stream == "cuda-graph") spec.stream.params.set("warmup_steps", std::int64_t{3});
  spec.measure_steps = 10;
  spec.profile.steps = 3;
  return spec;
}

}  // namespace

TEST_CASE("a profiled ResNet run on CUDA has kernels per step and a GPU busy share", "[gpu]") {
  test::TempDir tmp;
  RunOutputs out;
  out.trace_path = (tmp.path() / "trace.json").string();
  const auto doc = run_one(profiled_gpu_spec("default"), test::built_plugins(), out);
  INFO(doc.dump(1).substr(0, 6000));
  REQUIRE(doc["status"] == "ok");
  const auto& p = doc["profile"];
  CHECK_FALSE(p.contains("error"));
  CHECK(p["activities"] == nlohmann::json::array({"cpu", "cuda"}));
  // ResNet18's forward, backward and foreach SGD: well over a hundred kernels per step.
  CHECK(p["kernels_per_step"].get<double>() > 100);
  const double share = p["gpu_busy_share"].get<double>();
  CHECK(share > 0);
  CHECK(share <= 1);
  CHECK(p["gpu_kernel_ms_per_step"].get<double>() > 0);
  CHECK(p["gpu_busy_ms_per_step"].get<double>() <= p["step_ms"].get<double>() * 1.0001);
  // The share is of the measured step; the profiler's host time makes the profiled step longer,
  // never shorter, so the profiled steps' own share is no larger.
  CHECK(p["measured_step_ms"] == doc["metrics"]["step_ms_mean"]);
  CHECK(p["gpu_busy_share_profiled"].get<double>() <= share + 0.05);
  CHECK(p["cuda_launches_per_step"].get<double>() > 0);
  REQUIRE_FALSE(p["top_kernels"].empty());
  for (const auto& k : p["top_kernels"]) {
    CHECK(k["calls"].get<std::int64_t>() >= 1);
    CHECK(k["share"].get<double>() > 0);
    CHECK(k["share"].get<double>() <= 1);
  }
  CHECK_FALSE(p["top_cpu_ops"].empty());

  // The trace holds the GPU's kernels beside the runner's phases.
  REQUIRE(fs::exists(out.trace_path));
  std::ifstream in(out.trace_path);
  const auto trace = nlohmann::json::parse(in);
  std::size_t kernels = 0;
  bool forward = false;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "kernel") ++kernels;
    if (e.value("name", "") == "forward") forward = true;
  }
  CHECK(kernels >= 3 * 100);
  CHECK(forward);

  // In the store: the summary, and the diagnosis citing the trace.
  test::TempDir dbdir;
  storage::Store store((dbdir.path() / "r.db").string());
  const auto id = store.record(store.open_sweep("gpu", "gpu", ""), doc);
  const auto run = store.run(id);
  REQUIRE(run->profile);
  CHECK(run->profile->gpu());
  CHECK(*run->profile->kernels_per_step > 100);
  CHECK(run->profile->top_kernels.size() == p["top_kernels"].size());
  INFO(run->diagnosis_detail);
  CHECK_THAT(run->diagnosis_detail, Catch::Contains("kernels/step"));
}

TEST_CASE("a profiled CUDA-graph run replays its kernels with few launches", "[gpu]") {
  const auto doc = run_one(profiled_gpu_spec("cuda-graph"), test::built_plugins());
  INFO(doc.dump(1).substr(0, 6000));
  REQUIRE(doc["status"] == "ok");
  const auto& p = doc["profile"];
  CHECK_FALSE(p.contains("error"));
  const double kernels = p["kernels_per_step"].get<double>();
  CHECK(kernels > 100);
  // One graph launch replays the step's kernels: the host launches far fewer than run.
  CHECK(p["cuda_launches_per_step"].get<double>() < kernels / 4);
  CHECK(p["gpu_busy_share"].get<double>() > 0);
  CHECK(p["gpu_busy_share"].get<double>() <= 1);
}
