// The resnet model's `fused_bn` and `fused_bn_impl` options on the CPU: declared, same
// parameters and buffers, and (since both fused implementations, our kernels and cuDNN's, are
// CUDA-only) exactly the unfused model's numbers. The fused CUDA paths themselves are tested
// against the unfused ops in tests/gpu/fused_bn_gpu_test.cpp.
#include "fused_bn.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "fused_bn_cudnn.h"
#include "integration/test_support.h"

using namespace orch;

namespace {

std::shared_ptr<Model> make_resnet(std::int64_t depth, bool fused, std::int64_t classes = 10,
                                   const std::string& impl = "orch") {
  return test::built_plugins().create_model(
      test::choice("resnet", {{"depth", depth}, {"fused_bn", fused}, {"fused_bn_impl", impl}}),
      {classes, {3, 32, 32}});
}

/// One SGD training step; returns the logits.
torch::Tensor train_step(Model& model, const torch::Tensor& images, const torch::Tensor& labels) {
  model.module().train();
  auto logits = model.forward(images);
  auto loss = torch::nn::functional::cross_entropy(logits, labels);
  loss.backward();
  torch::NoGradGuard no_grad;
  for (auto& p : model.module().parameters()) p.sub_(p.grad(), 0.01);
  return logits.detach();
}

/// One training step of an unfused and a fused model from the same state: on the CPU
/// fused_bn_relu runs bn->forward + add + relu, so the results are bit-identical: logits, every
/// gradient, and running statistics / num_batches_tracked after the step; then eval mode.
void check_trains_like_unfused(std::int64_t depth, bool channels_last, const std::string& impl) {
  INFO("depth " << depth << (channels_last ? " channels-last" : " contiguous") << ", fused_bn_impl "
                << impl);
  torch::manual_seed(7);
  auto plain = make_resnet(depth, false);
  auto fused = make_resnet(depth, true, 10, impl);
  test::copy_state(plain->module(), fused->module());
  auto images = torch::randn({4, 3, 32, 32});
  const auto labels = torch::randint(0, 10, {4}, torch::kLong);
  if (channels_last) {
    images = images.contiguous(torch::MemoryFormat::ChannelsLast);
  }
  const auto out_plain = train_step(*plain, images, labels);
  const auto out_fused = train_step(*fused, images, labels);
  CHECK(torch::equal(out_plain, out_fused));
  auto grads_plain = plain->module().named_parameters();
  for (const auto& p : fused->module().named_parameters()) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
    CHECK(torch::equal(p.value().grad(), grads_plain[p.key()].grad()));
    CHECK(torch::equal(p.value(), grads_plain[p.key()]));
  }
  auto buffers_plain = plain->module().named_buffers();
  for (const auto& b : fused->module().named_buffers()) {
    INFO(b.key());
    CHECK(torch::equal(b.value(), buffers_plain[b.key()]));
  }
  CHECK(buffers_plain["layer1.0.bn1.num_batches_tracked"].item<std::int64_t>() == 1);
  CHECK_FALSE(torch::equal(buffers_plain["layer1.0.bn1.running_mean"],
                           torch::zeros_like(buffers_plain["layer1.0.bn1.running_mean"])));
  // Eval mode (running statistics) agrees too.
  torch::NoGradGuard no_grad;
  plain->module().eval();
  fused->module().eval();
  const auto eval_plain = plain->forward(images);
  const auto eval_fused = fused->forward(images);
  CHECK(torch::isfinite(eval_plain).all().item<bool>());
  CHECK(torch::equal(eval_plain, eval_fused));
}

}  // namespace

TEST_CASE("resnet declares fused_bn, off by default", "[resnet][fused_bn]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "resnet");
  REQUIRE(info != nullptr);
  const ParamSpec* fused = nullptr;
  for (const auto& p : info->params) {
    if (p.name == "fused_bn") fused = &p;
  }
  REQUIRE(fused != nullptr);
  CHECK(fused->type == ParamType::kBool);
  CHECK(std::get<bool>(fused->default_value) == false);
  CHECK_FALSE(fused->doc.empty());
}

TEST_CASE("resnet declares fused_bn_impl: orch or cudnn, cudnn by default, unhashed at cudnn",
          "[resnet][fused_bn]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "resnet");
  REQUIRE(info != nullptr);
  const ParamSpec* impl = nullptr;
  for (const auto& p : info->params) {
    if (p.name == "fused_bn_impl") impl = &p;
    // Both added after results were recorded: left out of the configuration hash at default.
    if (p.name == "fused_bn" || p.name == "fused_bn_impl") CHECK(p.hash_exempt_at_default());
  }
  REQUIRE(impl != nullptr);
  CHECK(impl->type == ParamType::kString);
  // cudnn since it measured faster than ours (plugin.cpp).
  CHECK(std::get<std::string>(impl->default_value) == "cudnn");
  REQUIRE(impl->allowed.size() == 2);
  CHECK(std::get<std::string>(impl->allowed[0]) == "orch");
  CHECK(std::get<std::string>(impl->allowed[1]) == "cudnn");
  CHECK_FALSE(impl->doc.empty());
  // The model reads it by the same names.
  CHECK(resnet::fused_bn_impl_from_string("orch") == resnet::FusedBnImpl::kOrch);
  CHECK(resnet::fused_bn_impl_from_string("cudnn") == resnet::FusedBnImpl::kCudnn);
  CHECK(std::string(resnet::to_string(resnet::FusedBnImpl::kCudnn)) == "cudnn");
  CHECK_THROWS_WITH(resnet::fused_bn_impl_from_string("cuDNN"),
                    Catch::Matchers::Contains("not one of orch, cudnn"));
}

TEST_CASE("fused_bn keeps torchvision's parameter and buffer names and counts",
          "[resnet][fused_bn]") {
  for (std::int64_t depth : {18, 50}) {
    INFO("depth " << depth);
    auto plain = test::built_plugins().create_model(test::choice("resnet", {{"depth", depth}}),
                                                    {1000, {3, 224, 224}});
    auto fused = test::built_plugins().create_model(
        test::choice("resnet", {{"depth", depth}, {"fused_bn", true}}), {1000, {3, 224, 224}});
    CHECK(fused->module().named_parameters().keys() == plain->module().named_parameters().keys());
    CHECK(fused->module().named_buffers().keys() == plain->module().named_buffers().keys());
    std::int64_t n_plain = 0, n_fused = 0;
    for (const auto& p : plain->module().parameters()) n_plain += p.numel();
    for (const auto& p : fused->module().parameters()) n_fused += p.numel();
    CHECK(n_fused == n_plain);
    if (depth == 50) CHECK(n_fused == 25'557'032);
  }
}

TEST_CASE("fused_bn on the CPU trains exactly like the unfused model", "[resnet][fused_bn]") {
  for (std::int64_t depth : {18, 50}) {
    for (bool channels_last : {false, true})
      check_trains_like_unfused(depth, channels_last, "orch");
  }
}

TEST_CASE("fused_bn_impl: cudnn on the CPU trains exactly like the unfused model",
          "[resnet][fused_bn]") {
  // Channels-last is the layout the fused paths take on a GPU; here both fall back.
  for (std::int64_t depth : {18, 50}) check_trains_like_unfused(depth, true, "cudnn");
}

TEST_CASE("fused_bn_relu falls back to the unfused ops on the CPU", "[resnet][fused_bn]") {
  torch::nn::BatchNorm2d bn_a(6), bn_b(6);
  {
    torch::NoGradGuard no_grad;
    bn_a->weight.uniform_(0.5, 1.5);
    bn_a->bias.uniform_(-0.5, 0.5);
    bn_b->weight.copy_(bn_a->weight);
    bn_b->bias.copy_(bn_a->bias);
  }
  const auto x = torch::randn({3, 6, 5, 7}).contiguous(torch::MemoryFormat::ChannelsLast);
  const auto residual = torch::randn({3, 6, 5, 7});
  CHECK_FALSE(resnet::fused_bn_supported(x, {}, bn_a->weight, bn_a->bias, bn_a->running_mean,
                                         bn_a->running_var));
  CHECK_FALSE(resnet::fused_bn_supported(x.to(torch::kBFloat16), {}, bn_a->weight, bn_a->bias,
                                         bn_a->running_mean, bn_a->running_var));
  const auto before = resnet::fused_bn_counters();
  const auto fused = resnet::fused_bn_relu(*bn_a, x, residual);
  const auto after = resnet::fused_bn_counters();
  CHECK(after.unfused == before.unfused + 1);
  CHECK(after.fused == before.fused);
  auto expected = bn_b(x);
  expected += residual;
  expected.relu_();
  CHECK(torch::equal(fused, expected));
  CHECK(torch::equal(bn_a->running_mean, bn_b->running_mean));
  CHECK(torch::equal(bn_a->running_var, bn_b->running_var));
  CHECK(bn_a->num_batches_tracked.item<std::int64_t>() == 1);
  // The raw fused function refuses what its kernels do not take, naming the input.
  CHECK_THROWS_WITH(
      resnet::fused_bn_relu_training(x, {}, bn_a->weight, bn_a->bias, bn_a->running_mean,
                                     bn_a->running_var, 0.1, 1e-5),
      Catch::Matchers::Contains("fused kernels do not take"));
}

TEST_CASE("fused_bn_impl: cudnn falls back to the unfused ops on the CPU", "[resnet][fused_bn]") {
  torch::nn::BatchNorm2d bn_a(8), bn_b(8);
  {
    torch::NoGradGuard no_grad;
    bn_a->weight.uniform_(0.5, 1.5);
    bn_a->bias.uniform_(-0.5, 0.5);
    bn_b->weight.copy_(bn_a->weight);
    bn_b->bias.copy_(bn_a->bias);
  }
  const auto x = torch::randn({3, 8, 5, 7}).contiguous(torch::MemoryFormat::ChannelsLast);
  const auto residual = torch::randn({3, 8, 5, 7});
  std::string why;
  CHECK_FALSE(resnet::cudnn_fused_bn_supported(x.to(torch::kHalf), {}, bn_a->weight, bn_a->bias,
                                               bn_a->running_mean, bn_a->running_var, &why));
  CHECK_THAT(why, Catch::Matchers::Contains("fused_bn_supported"));
  for (const bool with_residual : {false, true}) {
    INFO((with_residual ? "with" : "without") << " a residual");
    const auto res = with_residual ? residual : torch::Tensor();
    const auto before = resnet::fused_bn_counters();
    const auto out = resnet::fused_bn_relu(*bn_a, x, res, resnet::FusedBnImpl::kCudnn);
    const auto after = resnet::fused_bn_counters();
    CHECK(after.unfused == before.unfused + 1);
    CHECK(after.fused == before.fused);
    CHECK(after.cudnn == before.cudnn);
    CHECK(after.orch == before.orch);
    // Not a fallback from cuDNN to our kernels: neither fused path takes a CPU tensor.
    CHECK(after.cudnn_fallback == before.cudnn_fallback);
    auto expected = bn_b(x);
    if (with_residual) expected += res;
    expected.relu_();
    CHECK(torch::equal(out, expected));
    CHECK(torch::equal(bn_a->running_mean, bn_b->running_mean));
    CHECK(torch::equal(bn_a->running_var, bn_b->running_var));
  }
  CHECK(bn_a->num_batches_tracked.item<std::int64_t>() == 2);
  // The raw cuDNN function refuses what it does not try, naming the reason.
  CHECK_THROWS_WITH(
      resnet::cudnn_fused_bn_relu_training(x, {}, bn_a->weight, bn_a->bias, bn_a->running_mean,
                                           bn_a->running_var, 0.1, 1e-5),
      Catch::Matchers::Contains("does not try"));
}
