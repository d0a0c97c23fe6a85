// Precision modes and optimizer implementations on a real GPU: fp16 AMP really scales the loss
// (and skips a step with an injected inf, on the device with the fused optimizer), tf32 trains,
// and loop, foreach and fused SGD give the same parameters on CUDA.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "integration/test_support.h"
#include "runner/runner.h"
#include "runner/sgd.h"

using namespace orch;

namespace {

bool is_power_of_two(double v) {
  int exp = 0;
  return v > 0 && std::frexp(v, &exp) == 0.5;
}

}  // namespace

TEST_CASE("fp16 AMP on CUDA trains with dynamic loss scaling", "[gpu][precision]") {
  for (const char* impl : {"foreach", "fused", "loop"}) {
    RunSpec spec = test::small_cpu_spec();
    spec.device = "cuda";
    spec.precision = test::choice("amp", {{"dtype", std::string("fp16")},
                                          {"init_scale", 65536.0},
                                          {"growth_interval", std::int64_t{2000}}});
    spec.optimizer.impl = impl;
    spec.measure_steps = 20;
    const auto doc = run_one(spec, test::built_plugins());
    INFO(impl << ": " << doc.dump(2));
    REQUIRE(doc["status"] == "ok");
    const auto& m = doc["metrics"];
    CHECK(m["loss_last"].get<double>() < 0.5 * m["loss_first"].get<double>());
    const auto& counters = doc["counters"];
    REQUIRE(counters.contains("precision.loss_scale"));
    REQUIRE(counters.contains("precision.skipped_steps"));
    const double scale = counters["precision.loss_scale"].get<double>();
    CHECK(is_power_of_two(scale));
    CHECK(scale <= 65536.0);
    CHECK(counters["precision.skipped_steps"].get<double>() < 10);
  }
}

TEST_CASE("tf32 trains on CUDA with TF32 allowed", "[gpu][precision]") {
  RunSpec spec = test::small_cpu_spec();
  spec.device = "cuda";
  spec.precision = test::choice("tf32");
  spec.measure_steps = 20;
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["metrics"]["loss_last"].get<double>() <
        0.5 * doc["metrics"]["loss_first"].get<double>());
  CHECK(at::globalContext().allowTF32CuBLAS());
  CHECK(at::globalContext().allowTF32CuDNN());
}

TEST_CASE("amp fp16 on CUDA skips a step with an injected inf", "[gpu][precision]") {
  const torch::Device cuda(torch::kCUDA, 0);
  for (const char* impl : {"fused", "foreach"}) {
    INFO(impl);
    torch::manual_seed(0);
    auto precision = test::built_plugins().create_precision(
        test::choice("amp", {{"dtype", std::string("fp16")}}), {cuda});
    precision->configure();
    test::LinearProbe probe(64, 10);
    probe.fc->to(cuda);
    auto opt = make_optimizer(test::sgd(impl, 0.1, 0.9, 1e-4), probe.module().parameters());
    Batch b{torch::randn({32, 64}, cuda),
            torch::randint(10, {32}, torch::TensorOptions(cuda).dtype(torch::kLong))};
    const auto before = probe.fc->weight.detach().clone();

    opt->zero_grad();
    auto loss = precision->forward_loss(probe, b);
    precision->backward_step(loss * std::numeric_limits<float>::infinity(), *opt);
    auto counters = precision->counters();
    CHECK(counters.at("skipped_steps") == 1);
    CHECK(counters.at("loss_scale") == 32768.0);
    CHECK(torch::equal(probe.fc->weight.detach(), before));

    for (int i = 0; i < 3; ++i) {
      opt->zero_grad();
      precision->backward_step(precision->forward_loss(probe, b), *opt);
    }
    counters = precision->counters();
    CHECK(counters.at("skipped_steps") == 1);
    CHECK(counters.at("loss_scale") == 32768.0);
    CHECK_FALSE(torch::equal(probe.fc->weight.detach(), before));
  }
}

TEST_CASE("loop, foreach and fused SGD give the same parameters on CUDA", "[gpu][optimizer]") {
  const torch::Device cuda(torch::kCUDA, 0);
  // Same weights, same batch, several steps with momentum and weight decay.
  auto train = [&](const char* impl) {
    torch::manual_seed(3);
    torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)),
                              torch::nn::BatchNorm2d(8), torch::nn::ReLU(), torch::nn::Flatten(),
                              torch::nn::Linear(8 * 8 * 8, 10));
    net->to(cuda);
    auto x = torch::randn({16, 3, 8, 8}, cuda);
    auto y = torch::randint(10, {16}, torch::TensorOptions(cuda).dtype(torch::kLong));
    auto opt = make_optimizer(test::sgd(impl, 0.05, 0.9, 1e-3), net->parameters());
    for (int i = 0; i < 8; ++i) {
      opt->zero_grad();
      torch::nn::functional::cross_entropy(net->forward(x), y).backward();
      opt->step();
    }
    std::vector<torch::Tensor> out;
    for (const auto& p : net->parameters()) out.push_back(p.detach().cpu());
    return out;
  };
  // fp32 math everywhere, so only the order of floating-point operations differs.
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setDeterministicCuDNN(true);
  const auto loop = train("loop");
  for (const char* impl : {"foreach", "fused"}) {
    INFO(impl);
    const auto other = train(impl);
    REQUIRE(other.size() == loop.size());
    for (std::size_t i = 0; i < loop.size(); ++i) {
      INFO("parameter " << i);
      CHECK(torch::allclose(other[i], loop[i], /*rtol=*/1e-4, /*atol=*/1e-5));
    }
  }
  at::globalContext().setDeterministicCuDNN(false);
}
