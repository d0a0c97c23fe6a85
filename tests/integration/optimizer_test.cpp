// The three SGD implementations (loop, foreach, fused) on the CPU: each matches an update
// computed by hand, they agree with each other over several real training steps, and the fused
// one unscales and skips on the device.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <stdexcept>

#include "integration/test_support.h"
#include "runner/sgd.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

const char* const kImpls[] = {"loop", "foreach", "fused"};

void set_grad(torch::Tensor& p, const torch::Tensor& g) { p.mutable_grad() = g.clone(); }

bool same(const torch::Tensor& a, const torch::Tensor& b, double tol = 1e-6) {
  return torch::allclose(a, b, /*rtol=*/tol, /*atol=*/tol);
}

// A small convolutional model; the same seed gives the same initial weights.
struct Net : torch::nn::Module {
  Net() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3)));
    bn = register_module("bn", torch::nn::BatchNorm2d(4));
    fc = register_module("fc", torch::nn::Linear(4 * 6 * 6, 5));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc(torch::relu(bn(conv(x))).flatten(1)); }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Linear fc{nullptr};
};

// Trains a fresh Net for `steps` steps on one fixed batch and returns its final parameters.
// With `channels_last`, the 4-D weights and the batch are NHWC, as the runner makes them.
std::vector<torch::Tensor> train_net(const OptimizerSpec& spec, int steps,
                                     bool channels_last = false) {
  torch::manual_seed(7);
  Net net;
  auto x = torch::randn({6, 3, 8, 8});
  if (channels_last) {
    torch::NoGradGuard no_grad;
    net.conv->weight.set_data(net.conv->weight.contiguous(at::MemoryFormat::ChannelsLast));
    x = x.contiguous(at::MemoryFormat::ChannelsLast);
  }
  auto y = torch::randint(5, {6}, torch::kLong);
  auto opt = make_optimizer(spec, net.parameters());
  for (int i = 0; i < steps; ++i) {
    opt->zero_grad();
    torch::nn::functional::cross_entropy(net.forward(x), y).backward();
    opt->step();
  }
  std::vector<torch::Tensor> out;
  for (const auto& p : net.parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

TEST_CASE("every SGD implementation matches the update computed by hand", "[optimizer]") {
  const double lr = 0.1, momentum = 0.9, wd = 0.01;
  for (const char* impl : kImpls) {
    INFO(impl);
    std::vector<torch::Tensor> params{torch::tensor({1.0, -2.0}, torch::kDouble).requires_grad_(),
                                      torch::tensor({0.5}, torch::kDouble).requires_grad_()};
    auto opt = make_optimizer(test::sgd(impl, lr, momentum, wd), params);
    REQUIRE(opt->params().size() == 2);
    // The same update in plain doubles: g += wd*p; buf = g (first step) or m*buf + g; p -= lr*buf.
    double p[3] = {1.0, -2.0, 0.5}, buf[3] = {0, 0, 0};
    const double grads[3][3] = {{0.5, 0.25, -1.0}, {-0.3, 0.75, 2.0}, {0.1, 0.0, -0.5}};
    for (int step = 0; step < 3; ++step) {
      const auto* g = grads[step];
      set_grad(params[0], torch::tensor({g[0], g[1]}, torch::kDouble));
      set_grad(params[1], torch::tensor({g[2]}, torch::kDouble));
      opt->step();
      for (int i = 0; i < 3; ++i) {
        const double d = g[i] + wd * p[i];
        buf[i] = step == 0 ? d : momentum * buf[i] + d;
        p[i] -= lr * buf[i];
      }
    }
    CHECK(same(params[0].detach(), torch::tensor({p[0], p[1]}, torch::kDouble), 1e-12));
    CHECK(same(params[1].detach(), torch::tensor({p[2]}, torch::kDouble), 1e-12));
  }
}

TEST_CASE("loop, foreach and fused train a model to the same parameters", "[optimizer]") {
  const auto loop = train_net(test::sgd("loop", 0.05, 0.9, 1e-3), 6);
  for (const char* impl : {"foreach", "fused"}) {
    INFO(impl);
    const auto other = train_net(test::sgd(impl, 0.05, 0.9, 1e-3), 6);
    REQUIRE(other.size() == loop.size());
    for (std::size_t i = 0; i < loop.size(); ++i) {
      INFO("parameter " << i);
      CHECK(same(other[i], loop[i], 1e-5));
    }
  }
  // Channels-last weights: gradients and buffers must follow the weights' strides.
  const auto loop_nhwc = train_net(test::sgd("loop", 0.05, 0.9, 1e-3), 6, true);
  for (const char* impl : {"foreach", "fused"}) {
    INFO(impl << " channels_last");
    const auto other = train_net(test::sgd(impl, 0.05, 0.9, 1e-3), 6, true);
    for (std::size_t i = 0; i < loop_nhwc.size(); ++i) CHECK(same(other[i], loop_nhwc[i], 1e-5));
  }
  // Momentum 0 and no weight decay take other branches (the fused kernel gets no buffers).
  const auto plain = train_net(test::sgd("loop", 0.05, 0.0, 0.0), 4);
  for (const char* impl : {"foreach", "fused"}) {
    INFO(impl << " without momentum");
    const auto other = train_net(test::sgd(impl, 0.05, 0.0, 0.0), 4);
    for (std::size_t i = 0; i < plain.size(); ++i) CHECK(same(other[i], plain[i], 1e-5));
  }
}

TEST_CASE("SGD leaves parameters without a gradient alone, and zero_grad resets to none",
          "[optimizer]") {
  for (const char* impl : kImpls) {
    INFO(impl);
    std::vector<torch::Tensor> params{torch::ones({2}).requires_grad_(),
                                      torch::ones({3}).requires_grad_()};
    auto opt = make_optimizer(test::sgd(impl, 0.5, 0.9, 0.1), params);
    set_grad(params[0], torch::ones({2}));
    opt->step();
    CHECK(same(params[0].detach(), torch::full({2}, 1.0 - 0.5 * 1.1)));
    CHECK(same(params[1].detach(), torch::ones({3})));
    opt->zero_grad();
    CHECK_FALSE(params[0].grad().defined());
    // The second parameter takes its first step later: its buffer starts from its gradient.
    set_grad(params[1], torch::ones({3}));
    opt->step();
    CHECK(same(params[1].detach(), torch::full({3}, 1.0 - 0.5 * 1.1)));
  }
}

TEST_CASE("fused SGD skips on found_inf and unscales by grad_scale on the device", "[optimizer]") {
  // One fused step from p = [1, 2] with gradient `grad` everywhere; returns the new p.
  auto run = [](const std::optional<torch::Tensor>& grad_scale,
                const std::optional<torch::Tensor>& found_inf, float grad) {
    std::vector<torch::Tensor> params{torch::tensor({1.0f, 2.0f}).requires_grad_()};
    auto opt = make_optimizer(test::sgd("fused", 0.1, 0.9, 0.01), params);
    REQUIRE(opt->supports_device_unscale());
    set_grad(params[0], torch::full({2}, grad));
    opt->step(grad_scale, found_inf);
    return params[0].detach().clone();
  };

  SECTION("found_inf = 1 leaves the parameters untouched; 0 steps") {
    CHECK(torch::equal(run(std::nullopt, torch::ones({1}), 0.5f), torch::tensor({1.0f, 2.0f})));
    const auto stepped = run(std::nullopt, torch::zeros({1}), 0.5f);
    CHECK(torch::equal(stepped, run(std::nullopt, std::nullopt, 0.5f)));
    CHECK_FALSE(torch::equal(stepped, torch::tensor({1.0f, 2.0f})));
  }
  SECTION("grad_scale divides the gradients first") {
    CHECK(same(run(torch::full({1}, 1024.0f), std::nullopt, 0.5f * 1024),
               run(std::nullopt, std::nullopt, 0.5f)));
  }
  SECTION("a skipped first step leaves a usable momentum buffer") {
    std::vector<torch::Tensor> fused{torch::tensor({1.0f, 2.0f}).requires_grad_()};
    std::vector<torch::Tensor> loop{torch::tensor({1.0f, 2.0f}).requires_grad_()};
    auto f = make_optimizer(test::sgd("fused", 0.1, 0.9, 0.01), fused);
    auto l = make_optimizer(test::sgd("loop", 0.1, 0.9, 0.01), loop);
    set_grad(fused[0], torch::full({2}, INFINITY));
    f->step(std::nullopt, torch::ones({1}));
    // From here on both see the same gradients; the skipped step must not show.
    for (float g : {0.5f, -0.25f, 1.0f}) {
      set_grad(fused[0], torch::full({2}, g));
      set_grad(loop[0], torch::full({2}, g));
      f->step(std::nullopt, torch::zeros({1}));
      l->step();
    }
    CHECK(same(fused[0].detach(), loop[0].detach()));
  }
}

TEST_CASE("loop and foreach SGD refuse device unscaling; unknown impls are refused",
          "[optimizer]") {
  for (const char* impl : {"loop", "foreach"}) {
    INFO(impl);
    std::vector<torch::Tensor> params{torch::ones({2}).requires_grad_()};
    auto opt = make_optimizer(test::sgd(impl, 0.1, 0.9, 0.0), params);
    CHECK_FALSE(opt->supports_device_unscale());
    set_grad(params[0], torch::ones({2}));
    CHECK_THROWS_AS(opt->step(std::nullopt, torch::zeros({1})), std::invalid_argument);
    CHECK_THROWS_WITH(opt->step(torch::ones({1}), std::nullopt), Contains("fused"));
    CHECK(torch::equal(params[0].detach(), torch::ones({2})));
  }
  CHECK_THROWS_WITH(make_optimizer(test::sgd("turbo", 0.1, 0.9, 0.0), {}),
                    Contains("unknown optimizer.impl 'turbo'"));
}
