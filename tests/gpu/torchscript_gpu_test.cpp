// The `torchscript` model on a real GPU: the host's move to CUDA reaches the TorchScript
// module's own tensors, and a TorchScript model trains through the runner in fp32 and in AMP
// bf16 channels-last, and under the cuda-graph strategy.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "integration/test_support.h"
#include "integration/torchscript_fixture.h"
#include "runner/runner.h"

using namespace orch;

namespace {

RunSpec tiny_spec(const std::string& path) {
  RunSpec spec = test::tiny_net_spec(path);
  spec.device = "cuda";
  spec.measure_steps = 20;
  return spec;
}

}  // namespace

TEST_CASE("torchscript: to(cuda) moves the TorchScript module's own tensors", "[gpu]") {
  test::TempDir dir;
  const auto path = test::save(test::tiny_net(3, 8, 10), dir, "tiny.pt");
  auto model = test::built_plugins().create_model(test::choice("torchscript", {{"path", path}}),
                                                  ModelContext{10, {3, 8, 8}});
  model->module().to(torch::Device(torch::kCUDA, 0));
  for (const auto& p : model->module().parameters()) CHECK(p.is_cuda());
  // A CUDA batch only runs if the module computes with the moved weights.
  const auto out = model->forward(torch::randn({4, 3, 8, 8}, torch::kCUDA));
  CHECK(out.is_cuda());
  CHECK(out.sizes() == torch::IntArrayRef{4, 10});
  // A CPU batch now fails, and the error names the model and the input's device.
  CHECK_THROWS_WITH(model->forward(torch::randn({4, 3, 8, 8})),
                    Catch::Contains("TorchScript model " + path) && Catch::Contains("cpu"));
}

TEST_CASE("torchscript: a TorchScript model trains on CUDA like a built-in one", "[gpu]") {
  test::TempDir dir;
  RunSpec spec = tiny_spec(test::save(test::tiny_net(3, 8, 10), dir, "tiny.pt"));
  SECTION("fp32, contiguous") {}
  SECTION("amp bf16, channels-last") {
    spec.precision = test::choice("amp", {{"dtype", std::string("bf16")}});
    spec.memory_format = "channels_last";
  }
  SECTION("amp bf16, cuda-graph") {
    // The graph executor profiles and optimises during the warm-up steps, before the capture.
    spec.precision = test::choice("amp", {{"dtype", std::string("bf16")}});
    spec.stream = test::choice("cuda-graph", {{"warmup_steps", std::int64_t{3}}});
    spec.warmup_steps = 5;
  }
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["device"] == "cuda:0");
  const auto& m = doc["metrics"];
  CHECK(m["loss_last"].get<double>() < 0.5 * m["loss_first"].get<double>());
}
