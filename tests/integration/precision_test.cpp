// Precision modes on the CPU: the amp plugin's loss scaler follows PyTorch GradScaler's rule step
// by step, fp32/tf32/amp set the TF32 flags they promise, and every precision (fp32, tf32, amp
// bf16, amp fp16 with loss scaling) trains ResNet18 to a lower loss. LibTorch 2.11's CPU
// autocast supports float16, so the fp16 path runs here end to end.
#include <ATen/Context.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "integration/test_support.h"
#include "precision/amp/loss_scaler.h"
#include "runner/runner.h"
#include "runner/sgd.h"

using namespace orch;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// GradScaler's update rule (torch/amp/grad_scaler.py, _amp_update_scale_), written out.
struct ReferenceScaler {
  double scale;
  std::int64_t growth_interval;
  std::int64_t tracker = 0;
  std::int64_t skipped = 0;
  void update(bool found_inf) {
    if (found_inf) {
      scale *= 0.5;
      tracker = 0;
      ++skipped;
    } else if (++tracker == growth_interval) {
      scale *= 2.0;
      tracker = 0;
    }
  }
};

bool is_power_of_two(double v) {
  int exp = 0;
  return v > 0 && std::frexp(v, &exp) == 0.5;
}

}  // namespace

TEST_CASE("the loss scaler follows GradScaler's rule step by step", "[precision][amp]") {
  // A finite step stays finite; inf and NaN gradients are both caught.
  const std::vector<int> pattern = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0};
  for (const char* impl : {"loop", "foreach", "fused"}) {
    INFO(impl << " (skips on the " << (std::string(impl) == "fused" ? "device" : "host") << ")");
    std::vector<torch::Tensor> params{torch::tensor({1.0f, -1.0f}).requires_grad_()};
    auto opt = make_optimizer(test::sgd(impl, 0.5), params);
    amp::LossScalerOptions options;
    options.init_scale = 1024;
    options.growth_interval = 3;
    amp::LossScaler scaler(torch::kCPU, options);
    ReferenceScaler ref{1024, 3};
    CHECK(scaler.current_scale() == 1024);

    const auto c = torch::tensor({0.25f, 0.5f});
    for (std::size_t step = 0; step < pattern.size(); ++step) {
      INFO("step " << step);
      const bool bad = pattern[step] != 0;
      auto coef = c.clone();
      if (pattern[step] == 1) coef[0] = kInf;
      if (pattern[step] == 2) coef[1] = std::nanf("");
      const auto before = params[0].detach().clone();
      opt->zero_grad();
      scaler.scale((params[0] * coef).sum()).backward();
      if (!bad) {
        // Backward saw the scaled loss.
        CHECK(torch::allclose(params[0].grad(), c * static_cast<float>(ref.scale)));
      }
      scaler.step(*opt);
      if (bad) {
        CHECK(torch::equal(params[0].detach(), before));  // skipped: untouched
      } else {
        CHECK(torch::allclose(params[0].grad(), c));  // unscaled before the step
        CHECK(torch::allclose(params[0].detach(), before - 0.5 * c));
      }
      ref.update(bad);
      CHECK(scaler.current_scale() == ref.scale);
      CHECK(scaler.skipped_steps() == ref.skipped);
    }
    // The pattern both grew (after 3 clean steps) and backed off.
    CHECK(ref.skipped == 3);
  }
}

TEST_CASE("the loss scaler halves on inf and doubles after growth_interval clean steps",
          "[precision][amp]") {
  std::vector<torch::Tensor> params{torch::zeros({3}).requires_grad_()};
  auto opt = make_optimizer(test::sgd("foreach", 0.1), params);
  amp::LossScalerOptions options;  // GradScaler's defaults but a short interval
  options.growth_interval = 2;
  amp::LossScaler scaler(torch::kCPU, options);
  CHECK(scaler.current_scale() == 65536.0);
  auto step = [&](float g) {
    opt->zero_grad();
    scaler.scale((params[0] * g).sum()).backward();
    scaler.step(*opt);
  };
  step(kInf);
  CHECK(scaler.current_scale() == 32768.0);
  CHECK(torch::equal(params[0].detach(), torch::zeros({3})));
  step(1.0f);
  CHECK(scaler.current_scale() == 32768.0);
  step(1.0f);
  CHECK(scaler.current_scale() == 65536.0);
  CHECK(scaler.skipped_steps() == 1);
  CHECK(torch::allclose(params[0].detach(), torch::full({3}, -0.2f)));
}

TEST_CASE("fp32, tf32 and amp set the TF32 flags they promise", "[precision]") {
  auto& reg = test::built_plugins();
  auto& ctx = at::globalContext();
  struct Case {
    PluginChoice choice;
    bool cublas, cudnn;
  };
  const Case cases[] = {
      {test::choice("tf32"), true, true},
      {test::choice("fp32"), false, false},
      {test::choice("tf32"), true, true},
      {test::choice("amp", {{"dtype", std::string("bf16")}}), false, true},
      {test::choice("amp", {{"dtype", std::string("fp16")}}), false, true},
  };
  for (const Case& c : cases) {
    INFO(c.choice.plugin);
    // Each must set both flags, whatever the run before it left.
    ctx.setAllowTF32CuBLAS(!c.cublas);
    ctx.setAllowTF32CuDNN(!c.cudnn);
    reg.create_precision(c.choice, {torch::kCPU})->configure();
    CHECK(ctx.allowTF32CuBLAS() == c.cublas);
    CHECK(ctx.allowTF32CuDNN() == c.cudnn);
  }
}

TEST_CASE("every precision trains ResNet18 to a lower loss on the CPU", "[precision][runner]") {
  struct Case {
    const char* name;
    PluginChoice precision;
    const char* impl;
  };
  const auto fp16 = test::choice("amp", {{"dtype", std::string("fp16")},
                                         {"init_scale", 65536.0},
                                         {"growth_interval", std::int64_t{2000}}});
  auto c = GENERATE_COPY(
      Case{"fp32", test::choice("fp32"), "foreach"}, Case{"tf32", test::choice("tf32"), "loop"},
      Case{"amp bf16", test::choice("amp", {{"dtype", std::string("bf16")}}), "fused"},
      Case{"amp fp16", fp16, "fused"});
  INFO(c.name << ", optimizer.impl " << c.impl);
  RunSpec spec = test::small_cpu_spec();
  spec.precision = c.precision;
  spec.optimizer.impl = c.impl;
  // One fp16 run only: without AVX-512 or AMX, CPU bf16 and fp16 steps take about 1.5 s here.
  // The scaler's host-skip path (foreach, loop) is covered by the tests above.
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  const auto& m = doc["metrics"];
  CHECK(m["loss_last"].get<double>() < 0.7 * m["loss_first"].get<double>());
  const auto& counters = doc["counters"];
  if (std::string(c.name) == "amp fp16") {
    REQUIRE(counters.contains("precision.loss_scale"));
    REQUIRE(counters.contains("precision.skipped_steps"));
    const double scale = counters["precision.loss_scale"].get<double>();
    CHECK(is_power_of_two(scale));
    CHECK(scale <= 65536.0);
    // 13 steps at most, and most of them must have stepped for the loss to fall.
    CHECK(counters["precision.skipped_steps"].get<double>() < 7);
  } else {
    CHECK_FALSE(counters.contains("precision.loss_scale"));
  }
}

TEST_CASE("amp fp16 skips a step with an injected inf and halves the scale", "[precision][amp]") {
  for (const char* impl : {"foreach", "fused"}) {
    INFO(impl);
    torch::manual_seed(0);
    auto precision = test::built_plugins().create_precision(
        test::choice("amp", {{"dtype", std::string("fp16")}}), {torch::kCPU});
    precision->configure();
    test::LinearProbe probe;
    auto opt = make_optimizer(test::sgd(impl, 0.1), probe.module().parameters());
    Batch b{torch::randn({8, 4}), torch::randint(3, {8}, torch::kLong)};
    const auto before = probe.fc->weight.detach().clone();

    opt->zero_grad();
    auto loss = precision->forward_loss(probe, b);
    CHECK(loss.scalar_type() == torch::kFloat);
    precision->backward_step(loss * kInf, *opt);
    auto counters = precision->counters();
    CHECK(counters.at("skipped_steps") == 1);
    CHECK(counters.at("loss_scale") == 32768.0);
    CHECK(torch::equal(probe.fc->weight.detach(), before));

    opt->zero_grad();
    precision->backward_step(precision->forward_loss(probe, b), *opt);
    counters = precision->counters();
    CHECK(counters.at("skipped_steps") == 1);
    CHECK(counters.at("loss_scale") == 32768.0);
    CHECK_FALSE(torch::equal(probe.fc->weight.detach(), before));
  }
}

TEST_CASE("amp fp16 runs the forward pass in float16 under CPU autocast", "[precision][amp]") {
  auto precision = test::built_plugins().create_precision(
      test::choice("amp", {{"dtype", std::string("fp16")}}), {torch::kCPU});
  test::LinearProbe model;
  Batch b{torch::randn({8, 4}), torch::randint(3, {8}, torch::kLong)};
  auto loss = precision->forward_loss(model, b);
  CHECK(model.seen == torch::kHalf);
  CHECK(loss.scalar_type() == torch::kFloat);
  CHECK(model.fc(b.images).scalar_type() == torch::kFloat);  // autocast is off again
}
