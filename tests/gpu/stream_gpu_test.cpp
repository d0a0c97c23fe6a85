// Stream strategies on a real GPU: copy-overlap and cuda-graph change where and how work is
// launched, not what is computed, so after the same steps the weights match `default`'s; a
// step that cannot be captured fails cleanly and leaves the GPU usable.
#include <cuda_runtime_api.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "integration/test_support.h"
#include "runner/runner.h"

using namespace orch;

namespace {

RunSpec gpu_spec(const std::string& strategy, const std::string& location) {
  RunSpec spec = test::small_cpu_spec();
  spec.device = "cuda";
  spec.cudnn_benchmark = "off";
  spec.warmup_steps = 4;
  spec.measure_steps = 10;
  spec.stream = test::choice(strategy);
  if (strategy == "cuda-graph") spec.stream.params.set("warmup_steps", std::int64_t{3});
  spec.data.params.set("location", location);
  spec.data.params.set("batches", std::int64_t{3});
  return spec;
}

// cuda-graph with one eager step before the capture.
auto graph_after_one_eager_step() {
  return test::built_plugins().create_strategy(
      test::choice("cuda-graph", {{"warmup_steps", std::int64_t{1}}}),
      {torch::Device(torch::kCUDA, 0)});
}

// Step functions whose batch is a 2x4 tensor of ones already on the GPU; train_step is the
// test's.
StepFunctions ones_batch_functions() {
  StepFunctions fns;
  fns.next_batch = [] {
    return Batch{torch::ones({2, 4}, torch::kCUDA),
                 torch::zeros({2}, torch::TensorOptions(torch::kCUDA).dtype(torch::kLong))};
  };
  fns.to_device = [](const Batch& b, bool) { return b; };
  return fns;
}

}  // namespace

TEST_CASE("the synthetic loader's pinned batches are page-locked host memory", "[gpu][stream]") {
  auto loader = test::built_plugins().create_loader(
      test::choice("synthetic", {{"image_size", std::int64_t{8}},
                                 {"channels", std::int64_t{3}},
                                 {"classes", std::int64_t{10}},
                                 {"batches", std::int64_t{1}},
                                 {"location", std::string("pinned")}}),
      {2, torch::Device(torch::kCUDA, 0), 0, false});
  const Batch b = loader->next();
  CHECK(b.images.device().is_cpu());
  CHECK(b.images.is_pinned());
  CHECK(b.labels.is_pinned());
}

TEST_CASE("copy-overlap and cuda-graph end with default's weights on CUDA", "[gpu][stream]") {
  // cuDNN's default backward kernels accumulate with atomics, so two identical runs differ
  // and the difference grows over training steps. Deterministic kernels make "the same
  // computation" checkable; the runner runs in this process, so the flag applies to it.
  at::globalContext().setDeterministicCuDNN(true);
  for (const char* precision : {"fp32", "amp"}) {
    auto with_precision = [&](RunSpec s) {
      if (std::string(precision) == "amp") {
        s.precision = test::choice("amp", {{"dtype", std::string("bf16")}});
      }
      return run_one(s, test::built_plugins());
    };
    const auto base = with_precision(gpu_spec("default", "device"));
    const auto again = with_precision(gpu_spec("default", "device"));
    const auto overlap = with_precision(gpu_spec("copy-overlap", "pinned"));
    const auto graph = with_precision(gpu_spec("cuda-graph", "device"));
    INFO(precision << "\n" << overlap.dump(1) << "\n" << graph.dump(1));
    REQUIRE(base["status"] == "ok");
    REQUIRE(overlap["status"] == "ok");
    REQUIRE(graph["status"] == "ok");
    const double ref = base["metrics"]["param_checksum"].get<double>();
    CHECK(again["metrics"]["param_checksum"].get<double>() == Approx(ref).epsilon(1e-9));
    CHECK(overlap["metrics"]["param_checksum"].get<double>() == Approx(ref).epsilon(1e-6));
    CHECK(graph["metrics"]["param_checksum"].get<double>() == Approx(ref).epsilon(1e-6));
    CHECK(graph["counters"]["stream.replays"].get<double>() == 11);  // 14 steps - 3 eager
    // Per-step losses are kept per step, not overwritten by later replays.
    CHECK(graph["steps"][0]["loss"] != graph["steps"][9]["loss"]);
  }
}

TEST_CASE("a step that synchronises with the host fails capture cleanly", "[gpu][stream]") {
  auto strategy = graph_after_one_eager_step();
  auto w = torch::ones({4}, torch::kCUDA);
  StepFunctions fns = ones_batch_functions();
  fns.train_step = [&](const Batch& b) {
    auto loss = (b.images * w).sum();
    if (loss.item<float>() > 1e9) w.add_(1);  // .item() synchronises: illegal while capturing
    return loss;
  };
  strategy->step(fns);  // eager warm-up step
  REQUIRE_THROWS_WITH(strategy->step(fns), Catch::Matchers::Contains("CUDA graph capture failed"));
  // The context is still usable: ordinary work runs and synchronises, and so does the CUDA
  // RNG (capture_begin put the default generator in capture mode; without the strategy
  // restoring it, this randn threw "Offset increment outside graph capture encountered
  // unexpectedly", and so did every later test drawing CUDA random numbers).
  auto x = torch::ones({128, 128}, torch::kCUDA);
  CHECK(std::isfinite(x.matmul(x).sum().item<float>()));
  CHECK_NOTHROW(torch::randn({64}, torch::kCUDA).sum().item<float>());
  torch::cuda::synchronize();
  at::globalContext().setDeterministicCuDNN(false);
}

TEST_CASE("cuda-graph capture gets the memory earlier steps left in the allocator's cache",
          "[gpu][stream]") {
  // The step needs a 2 GiB temporary. After its eager step, a tensor of all but 1 GiB of the
  // free memory is made and dropped, so the device has less free than the step needs and the
  // rest sits in the caching allocator's cache. The capture (a private pool, during which the
  // allocator frees nothing) must still get its 2 GiB: the strategy empties the cache first.
  // Without that, a ResNet50 at batch 768 failed capture with most of the memory cached, unused.
  constexpr std::int64_t kStepBytes = std::int64_t{2} << 30;
  auto strategy = graph_after_one_eager_step();
  StepFunctions fns = ones_batch_functions();
  fns.train_step = [&](const Batch& b) {
    const auto temp = torch::full({kStepBytes / 4}, 0.5f, torch::kCUDA);
    return b.images.sum() + temp.mean();
  };
  CHECK(strategy->step(fns).loss.item<float>() == Approx(8.5));  // eager
  torch::cuda::synchronize();
  std::size_t free = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  {
    const auto hog = torch::empty({static_cast<std::int64_t>(free) - kStepBytes / 2},
                                  torch::TensorOptions(torch::kCUDA).dtype(torch::kByte));
  }
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  REQUIRE(static_cast<std::int64_t>(free) < kStepBytes);  // the cache holds what the step needs
  CHECK(strategy->step(fns).loss.item<float>() == Approx(8.5));  // captured, then replayed
  CHECK(strategy->step(fns).loss.item<float>() == Approx(8.5));  // replayed
  CHECK(strategy->counters().at("replays") == 2);
}
