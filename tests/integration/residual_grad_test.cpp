// The resnet model's `fused_residual_grad` on the CPU: the 1x1 convolution whose backward adds
// its data gradient onto a shortcut gradient waiting in a sink (residual_grad.h) gives the
// gradients of conv2d + a separate add, consumes the sink, and counts which way it went; the
// parameter is declared; and a resnet with it on computes what the default one does (on the
// CPU bn3 runs unfused, so nothing is handed over). The GPU path (handed over by the fused
// batch-norm, one in-place GEMM) is compared in tests/gpu/fused_bn_gpu_test.cpp.
#include "residual_grad.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "integration/test_support.h"
#include "resnet.h"

using namespace orch;

namespace {

const auto kCl = torch::MemoryFormat::ChannelsLast;

}  // namespace

TEST_CASE("conv1x1_with_residual_grad: conv2d's output and gradients, plus the waiting one",
          "[resnet][residual_grad]") {
  torch::manual_seed(11);
  for (const bool channels_last : {true, false}) {
    INFO((channels_last ? "channels-last" : "contiguous"));
    auto x0 = torch::randn({3, 16, 5, 7}, torch::kDouble);
    auto w0 = torch::randn({24, 16, 1, 1}, torch::kDouble);
    if (channels_last) {
      x0 = x0.contiguous(kCl);
      w0 = w0.contiguous(kCl);
    }
    const auto dy = torch::randn({3, 24, 5, 7}, torch::kDouble);
    const auto shortcut = torch::randn({3, 16, 5, 7}, torch::kDouble).contiguous(kCl);

    // Reference: conv2d, with the shortcut's gradient added by autograd's own accumulation.
    auto x_ref = x0.clone().requires_grad_(true);
    auto w_ref = w0.clone().requires_grad_(true);
    const auto y_ref = torch::conv2d(x_ref, w_ref);
    y_ref.backward(dy);
    const auto dx_ref = x_ref.grad() + shortcut;

    for (const bool waiting : {false, true}) {
      INFO((waiting ? "a shortcut gradient waiting" : "nothing waiting"));
      auto x = x0.clone().requires_grad_(true);
      auto w = w0.clone().requires_grad_(true);
      auto sink = c10::make_intrusive<resnet::ResidualGradSink>();
      const auto y = resnet::conv1x1_with_residual_grad(x, w, sink);
      CHECK(torch::allclose(y, y_ref, 1e-12, 1e-12));
      // What bn3's fused backward does before conv1's backward runs.
      if (waiting) sink->grad = shortcut.clone();
      const auto before = resnet::residual_grad_counters();
      y.backward(dy);
      const auto after = resnet::residual_grad_counters();
      CHECK(torch::allclose(w.grad(), w_ref.grad(), 1e-10, 1e-10));
      CHECK(torch::allclose(x.grad(), waiting ? dx_ref : x_ref.grad(), 1e-10, 1e-10));
      CHECK_FALSE(sink->grad.defined());  // taken: a second backward would not add it again
      // The in-place GEMM takes channels-last gradients; others get the add.
      const bool gemm = waiting && channels_last;
      CHECK(after.accumulated == before.accumulated + (gemm ? 1 : 0));
      CHECK(after.plain == before.plain + (gemm ? 0 : 1));
    }
  }
  // Without a sink at all it is conv2d.
  auto x = torch::randn({2, 8, 3, 3}, torch::kDouble).requires_grad_(true);
  auto w = torch::randn({4, 8, 1, 1}, torch::kDouble).requires_grad_(true);
  resnet::conv1x1_with_residual_grad(x, w, {}).sum().backward();
  auto x2 = x.detach().clone().requires_grad_(true);
  torch::conv2d(x2, w.detach()).sum().backward();
  CHECK(torch::allclose(x.grad(), x2.grad(), 1e-12, 1e-12));
  CHECK_THROWS_WITH(resnet::conv1x1_with_residual_grad(x, torch::randn({4, 8, 3, 3}), {}),
                    Catch::Matchers::Contains("a 1x1 convolution"));
}

TEST_CASE("resnet declares fused_residual_grad, on by default and unhashed on",
          "[resnet][residual_grad]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "resnet");
  REQUIRE(info != nullptr);
  const ParamSpec* p = nullptr;
  for (const auto& s : info->params) {
    if (s.name == "fused_residual_grad") p = &s;
  }
  REQUIRE(p != nullptr);
  CHECK(p->type == ParamType::kBool);
  CHECK(std::get<bool>(p->default_value) == true);
  CHECK(p->hash_exempt_at_default());
  CHECK_FALSE(p->doc.empty());
}

TEST_CASE("a resnet with fused_residual_grad trains like the default one on the CPU",
          "[resnet][residual_grad]") {
  // On the CPU bn3 runs unfused, so nothing waits in the sinks: the 12 identity blocks'
  // conv1 compute plain data gradients through the new function, and every gradient is the
  // default network's.
  torch::manual_seed(12);
  resnet::ResNetOptions o;
  o.depth = 50;
  o.num_classes = 10;
  o.fused_bn = true;
  resnet::ResNet plain(o);
  o.fused_residual_grad = true;
  resnet::ResNet linked(o);
  test::copy_state(*plain, *linked);
  const auto images = torch::randn({2, 3, 32, 32}).contiguous(kCl);
  const auto labels = torch::tensor({1, 7}, torch::kLong);
  const auto before = resnet::residual_grad_counters();
  for (auto* net : {&plain, &linked}) {
    (*net)->train();
    torch::nn::functional::cross_entropy((*net)->forward(images), labels).backward();
  }
  const auto after = resnet::residual_grad_counters();
  CHECK(after.plain - before.plain == 12);  // ResNet50: 16 bottlenecks, 4 with a downsample
  CHECK(after.accumulated == before.accumulated);
  auto grads = plain->named_parameters();
  for (const auto& p : linked->named_parameters()) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
    CHECK(torch::allclose(p.value().grad(), grads[p.key()].grad(), 1e-5, 1e-6));
  }
  // Evaluation and no-grad forwards take the plain modules.
  linked->eval();
  torch::NoGradGuard no_grad;
  plain->eval();
  CHECK(torch::allclose(linked->forward(images), plain->forward(images), 1e-5, 1e-6));
  CHECK(resnet::residual_grad_counters().plain == after.plain);
}
