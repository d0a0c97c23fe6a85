// `fused_downsample` (plugins/model/resnet/ops/dual_bn.h) on the GPU: a downsample block's bn3,
// its shortcut's batch-norm, the add and the ReLU in one pass each way, against an fp32
// reference of relu(bn(x) + bn_s(s)) (output, both inputs' gradients, all four parameters'
// gradients, both running statistics) in fp16 and bf16, on the 16-byte path with the ReLU mask,
// without the mask and on the scalar path (C % 8 != 0); replay in a CUDA graph; and whole
// ResNet50s: the four downsample blocks taken, one step within the noise floor of two valid
// implementations, 300 fp16 steps training like the unfused model.
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <iostream>
#include <vector>

#include "conv_bn_from_stats.h"
#include "dgrad_link.h"
#include "dual_bn.h"
#include "fused_bn.h"
#include "gpu/gpu_test_support.h"
#include "integration/test_support.h"
#include "resnet.h"

using namespace orch;
using test::to_channels_last;

namespace {

const auto kCl = torch::MemoryFormat::ChannelsLast;

double rel(const torch::Tensor& a, const torch::Tensor& b) {
  const auto af = a.to(torch::kFloat), bf = b.to(torch::kFloat);
  return (af - bf).norm().item<double>() / (bf.norm().item<double>() + 1e-12);
}

/// Per-channel sum and sum of squares in fp32, as a convolution's epilogue gives them.
std::pair<torch::Tensor, torch::Tensor> sums(const torch::Tensor& t) {
  const auto f = t.to(torch::kFloat);
  return {f.sum({0, 2, 3}).contiguous(), (f * f).sum({0, 2, 3}).contiguous()};
}

struct Case {
  std::int64_t n, c, h;
  torch::ScalarType dtype;
  bool mask;
};

resnet::ResNetOptions fused_options(bool fused_downsample) {
  resnet::ResNetOptions o;
  o.depth = 50;
  o.num_classes = 10;
  o.fused_bn = true;
  o.fused_residual_grad = true;  // the plugin's default
  o.conv_bn_stats = true;
  o.fused_downsample = fused_downsample;
  return o;
}

}  // namespace

TEST_CASE("dual_bn_relu_from_sums: relu(bn(x) + bn_s(s)) against fp32, every gradient",
          "[gpu][dual_bn]") {
  // ResNet50's downsample outputs (256 at 56x56, 2048 at 7x7) at small batches, a channel count
  // that is not a multiple of 8 (the scalar path, no mask), and the mask switched off.
  const std::vector<Case> cases = {
      {8, 256, 28, torch::kHalf, true},  {8, 256, 28, torch::kBFloat16, true},
      {16, 2048, 7, torch::kHalf, true}, {8, 256, 28, torch::kHalf, false},
      {4, 12, 9, torch::kHalf, true},    {4, 12, 9, torch::kBFloat16, true}};
  torch::manual_seed(51);
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  for (const auto& cc : cases) {
    INFO(cc.n << "x" << cc.c << "x" << cc.h << "x" << cc.h << " " << cc.dtype
              << (cc.mask ? " mask" : " no mask"));
    auto bn = test::cuda_bn_away_from_identity(cc.c);
    auto bn_s = test::cuda_bn_away_from_identity(cc.c);
    const auto rm0 = bn->running_mean.clone(), rv0 = bn->running_var.clone();
    const auto rm0_s = bn_s->running_mean.clone(), rv0_s = bn_s->running_var.clone();
    auto x = (torch::randn({cc.n, cc.c, cc.h, cc.h}, opts) * 2 + 0.3).to(cc.dtype).contiguous(kCl);
    auto s = (torch::randn({cc.n, cc.c, cc.h, cc.h}, opts) - 0.2).to(cc.dtype).contiguous(kCl);
    const auto dy = torch::randn({cc.n, cc.c, cc.h, cc.h}, opts).to(cc.dtype).contiguous(kCl);
    const auto [sum, sqsum] = sums(x);
    const auto [sum_s, sqsum_s] = sums(s);
    x.requires_grad_(true);
    s.requires_grad_(true);

    const std::int64_t calls = resnet::dual_bn_calls();
    torch::Tensor y;
    {
      const resnet::ReluMaskScope mask_scope(cc.mask);
      y = resnet::dual_bn_relu_from_sums(*bn, x, sum, sqsum, *bn_s, s, sum_s, sqsum_s);
    }
    REQUIRE(y.defined());
    CHECK(resnet::dual_bn_calls() - calls == 1);
    CHECK(bn->num_batches_tracked.item<std::int64_t>() == 1);
    CHECK(bn_s->num_batches_tracked.item<std::int64_t>() == 1);
    REQUIRE(y.scalar_type() == cc.dtype);
    REQUIRE(y.is_contiguous(kCl));
    y.backward(dy);

    auto xr = x.detach().to(torch::kFloat).requires_grad_(true);
    auto sr = s.detach().to(torch::kFloat).requires_grad_(true);
    auto w = bn->weight.detach().clone().requires_grad_(true);
    auto b = bn->bias.detach().clone().requires_grad_(true);
    auto w_s = bn_s->weight.detach().clone().requires_grad_(true);
    auto b_s = bn_s->bias.detach().clone().requires_grad_(true);
    auto rm = rm0.clone(), rv = rv0.clone(), rm_s = rm0_s.clone(), rv_s = rv0_s.clone();
    const auto pre = at::batch_norm(xr, w, b, rm, rv, true, 0.1, 1e-5, false) +
                     at::batch_norm(sr, w_s, b_s, rm_s, rv_s, true, 0.1, 1e-5, false);
    const auto yr = pre.relu();
    const double tol = cc.dtype == torch::kHalf ? 5e-3 : 2e-2;  // bf16 keeps 8 bits, fp16 11
    INFO("rel |y - ref| " << rel(y, yr));
    CHECK(rel(y, yr) < tol);
    // ReLU's gradient from the stored output's y > 0, as the kernels take it.
    const auto g = dy.to(torch::kFloat) * (y.detach().to(torch::kFloat) > 0).to(torch::kFloat);
    pre.backward(g);
    INFO("rel dx " << rel(x.grad(), xr.grad()) << ", ds " << rel(s.grad(), sr.grad()) << ", dgamma "
                   << rel(bn->weight.grad(), w.grad()) << ", dbeta "
                   << rel(bn->bias.grad(), b.grad()) << ", dgamma_s "
                   << rel(bn_s->weight.grad(), w_s.grad()) << ", dbeta_s "
                   << rel(bn_s->bias.grad(), b_s.grad()));
    CHECK(x.grad().scalar_type() == cc.dtype);
    CHECK(rel(x.grad(), xr.grad()) < 2 * tol);
    CHECK(rel(s.grad(), sr.grad()) < 2 * tol);
    CHECK(rel(bn->weight.grad(), w.grad()) < 2 * tol);
    CHECK(rel(bn->bias.grad(), b.grad()) < 2 * tol);
    CHECK(rel(bn_s->weight.grad(), w_s.grad()) < 2 * tol);
    CHECK(rel(bn_s->bias.grad(), b_s.grad()) < 2 * tol);
    CHECK(rel(bn->running_mean, rm) < 1e-3);
    CHECK(rel(bn->running_var, rv) < 1e-3);
    CHECK(rel(bn_s->running_mean, rm_s) < 1e-3);
    CHECK(rel(bn_s->running_var, rv_s) < 1e-3);
  }
}

TEST_CASE("dual_bn_relu_from_sums: the mask and the saved output give the same gradients",
          "[gpu][dual_bn]") {
  torch::manual_seed(52);
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  auto x0 = torch::randn({8, 512, 14, 14}, opts).to(torch::kHalf).contiguous(kCl);
  auto s0 = torch::randn({8, 512, 14, 14}, opts).to(torch::kHalf).contiguous(kCl);
  const auto dy = torch::randn({8, 512, 14, 14}, opts).to(torch::kHalf).contiguous(kCl);
  const auto [sum, sqsum] = sums(x0);
  const auto [sum_s, sqsum_s] = sums(s0);
  std::vector<std::vector<torch::Tensor>> results;
  for (const bool mask : {true, false}) {
    auto bn = test::cuda_bn_away_from_identity(512);
    auto bn_s = test::cuda_bn_away_from_identity(512);
    torch::manual_seed(53);  // the same parameters both times
    {
      torch::NoGradGuard no_grad;
      for (auto* m : {&bn, &bn_s}) {
        (*m)->weight.copy_(torch::rand({512}, opts) + 0.5);
        (*m)->bias.copy_(torch::randn({512}, opts) * 0.1);
      }
    }
    auto x = x0.clone().requires_grad_(true), s = s0.clone().requires_grad_(true);
    const resnet::ReluMaskScope scope(mask);
    const auto y = resnet::dual_bn_relu_from_sums(*bn, x, sum, sqsum, *bn_s, s, sum_s, sqsum_s);
    REQUIRE(y.defined());
    y.backward(dy);
    results.push_back({y.detach(), x.grad(), s.grad(), bn->weight.grad(), bn_s->weight.grad()});
  }
  for (std::size_t i = 0; i < results[0].size(); ++i) {
    INFO("tensor " << i);
    CHECK(torch::equal(results[0][i], results[1][i]));  // bit for bit: the same y > 0
  }
}

TEST_CASE("dual_bn_relu_from_sums refuses what its kernels do not take, changing nothing",
          "[gpu][dual_bn]") {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  auto bn = test::cuda_bn_away_from_identity(64);
  auto bn_s = test::cuda_bn_away_from_identity(64);
  const auto x = torch::randn({2, 64, 8, 8}, opts).to(torch::kHalf).contiguous(kCl);
  const auto [sum, sqsum] = sums(x);
  const auto rm = bn->running_mean.clone();
  const std::int64_t calls = resnet::dual_bn_calls();
  // s of another shape, s in fp32, eval mode: each refused.
  const auto s_small = torch::randn({2, 64, 4, 4}, opts).to(torch::kHalf).contiguous(kCl);
  const auto [ss, sq] = sums(s_small);
  CHECK_FALSE(resnet::dual_bn_relu_from_sums(*bn, x, sum, sqsum, *bn_s, s_small, ss, sq).defined());
  const auto s32 = torch::randn({2, 64, 8, 8}, opts).contiguous(kCl);
  CHECK_FALSE(resnet::dual_bn_relu_from_sums(*bn, x, sum, sqsum, *bn_s, s32, sum, sqsum).defined());
  bn_s->eval();
  const auto s = torch::randn({2, 64, 8, 8}, opts).to(torch::kHalf).contiguous(kCl);
  CHECK_FALSE(resnet::dual_bn_relu_from_sums(*bn, x, sum, sqsum, *bn_s, s, sum, sqsum).defined());
  CHECK(resnet::dual_bn_calls() == calls);
  CHECK(torch::equal(bn->running_mean, rm));
  CHECK(bn->num_batches_tracked.item<std::int64_t>() == 0);
}

TEST_CASE("dual_bn_relu_from_sums forward and backward replay in a CUDA graph", "[gpu][dual_bn]") {
  torch::manual_seed(54);
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  auto bn = test::cuda_bn_away_from_identity(1024);
  auto bn_s = test::cuda_bn_away_from_identity(1024);
  auto x = torch::randn({16, 1024, 14, 14}, opts).to(torch::kHalf).contiguous(kCl);
  auto s = torch::randn({16, 1024, 14, 14}, opts).to(torch::kHalf).contiguous(kCl);
  const auto dy = torch::randn({16, 1024, 14, 14}, opts).to(torch::kHalf).contiguous(kCl);
  const auto [sum, sqsum] = sums(x);
  const auto [sum_s, sqsum_s] = sums(s);
  x.requires_grad_(true);
  s.requires_grad_(true);
  auto step = [&] {
    const auto y = resnet::dual_bn_relu_from_sums(*bn, x, sum, sqsum, *bn_s, s, sum_s, sqsum_s);
    auto g = torch::autograd::grad({y}, {x, s, bn->weight, bn_s->weight}, {dy});
    g.insert(g.begin(), y);
    return g;
  };
  auto side = c10::cuda::getStreamFromPool();
  c10::cuda::getCurrentCUDAStream().synchronize();
  at::cuda::CUDAGraph graph;
  {
    const c10::cuda::CUDAStreamGuard guard(side);
    const auto eager = step();
    graph.capture_begin();
    const auto captured = step();
    graph.capture_end();
    const auto rm_before = bn_s->running_mean.clone();
    graph.replay();
    side.synchronize();
    // The same inputs and the same kernels in the same order: the same bits.
    for (std::size_t i = 0; i < eager.size(); ++i) {
      INFO("tensor " << i);
      CHECK(torch::equal(captured[i], eager[i]));
    }
    CHECK_FALSE(torch::equal(bn_s->running_mean, rm_before));
  }
  side.synchronize();
}

TEST_CASE("fused_downsample: a ResNet50 takes its four downsample blocks, within fused_bn's noise",
          "[gpu][dual_bn]") {
  // One fp16 step of ResNet50s with the same weights: conv_bn_stats alone (the reference),
  // fused_bn with cuDNN's batch-norm (another valid implementation: the noise floor) and
  // conv_bn_stats with fused_downsample.
  const test::DeterministicCudnn deterministic;
  torch::manual_seed(55);
  resnet::ResNetOptions other_options = fused_options(false);
  other_options.conv_bn_stats = false;
  other_options.fused_bn_impl = resnet::FusedBnImpl::kCudnn;
  resnet::ResNet plain(fused_options(false)), other(other_options), dual(fused_options(true));
  test::copy_state(*plain, *other);
  test::copy_state(*plain, *dual);
  for (resnet::ResNet* net : {&plain, &other, &dual}) {
    (*net)->to(torch::kCUDA);
    to_channels_last(**net);
  }
  const auto images = torch::randn({16, 3, 64, 64}, torch::kCUDA).contiguous(kCl);
  const auto labels = torch::randint(0, 10, {16}, torch::dtype(torch::kLong).device(torch::kCUDA));
  auto step = [&](resnet::ResNet& net) { return test::forward_backward(net, images, labels); };
  const auto l_plain = step(plain);
  const auto l_other = step(other);
  const auto before = resnet::conv_bn_from_stats_counters();
  const auto l_dual = step(dual);
  const auto after = resnet::conv_bn_from_stats_counters();
  CHECK(after.dual - before.dual == 4);
  CHECK(after.dual_fallback == before.dual_fallback);
  CHECK(after.fallback == before.fallback);
  const double noise = rel(l_other, l_plain);
  std::cout << "rel logits: fused_downsample " << rel(l_dual, l_plain) << ", noise floor " << noise
            << "\n";
  CHECK(rel(l_dual, l_plain) <= 2 * noise + 1e-3);
  auto ref = plain->named_parameters();
  auto oth = other->named_parameters();
  std::vector<torch::Tensor> all_ref, all_other, all_dual;
  for (const auto& p : dual->named_parameters()) {
    REQUIRE(p.value().grad().defined());
    all_ref.push_back(ref[p.key()].grad().flatten().to(torch::kFloat));
    all_other.push_back(oth[p.key()].grad().flatten().to(torch::kFloat));
    all_dual.push_back(p.value().grad().flatten().to(torch::kFloat));
  }
  const auto g_ref = torch::cat(all_ref);
  const double whole = rel(torch::cat(all_dual), g_ref);
  const double whole_noise = rel(torch::cat(all_other), g_ref);
  std::cout << "rel gradient: fused_downsample " << whole << ", noise floor " << whole_noise
            << "\n";
  CHECK(whole <= 1.5 * whole_noise + 0.01);
  // The shortcut's batch-norm has its gradients and its running statistics moved.
  const auto& ds_bn = dual->named_buffers()["layer2.0.downsample.1.running_mean"];
  CHECK(rel(ds_bn, plain->named_buffers()["layer2.0.downsample.1.running_mean"]) < 1e-2);
}

TEST_CASE("fused_downsample: a ResNet50 trains like the unfused one for 300 fp16 steps",
          "[gpu][dual_bn]") {
  torch::manual_seed(56);
  resnet::ResNetOptions unfused_options;
  unfused_options.depth = 50;
  unfused_options.num_classes = 10;
  resnet::ResNet unfused(unfused_options), nudged(unfused_options);
  resnet::ResNet stats(fused_options(false)), dual(fused_options(true));
  for (resnet::ResNet* net : {&nudged, &stats, &dual}) test::copy_state(*unfused, **net);
  test::nudge_parameters(*nudged);
  for (resnet::ResNet* net : {&unfused, &nudged, &stats, &dual}) {
    (*net)->to(torch::kCUDA);
    to_channels_last(**net);
  }
  const auto batches = test::small_batches();
  auto train = [&](resnet::ResNet& net) {
    return test::train_steps(net, batches, torch::kHalf, 300);
  };
  const auto l_unfused = train(unfused);
  const auto l_nudged = train(nudged);
  const auto l_stats = train(stats);
  const auto before = resnet::conv_bn_from_stats_counters();
  const auto l_dual = train(dual);
  const auto after = resnet::conv_bn_from_stats_counters();
  CHECK(after.dual - before.dual == 4 * 300);
  test::check_loss_curve_within_noise(l_unfused, l_nudged, l_dual, l_stats);
  auto sum_of = [](resnet::ResNet& net) {
    double s = 0;
    for (const auto& p : net->parameters()) s += p.to(torch::kDouble).abs().sum().item<double>();
    return s;
  };
  const double s_unfused = sum_of(unfused), s_nudged = sum_of(nudged), s_stats = sum_of(stats),
               s_dual = sum_of(dual);
  std::cout << "parameter checksums: unfused " << s_unfused << ", nudged " << s_nudged
            << ", conv_bn_stats " << s_stats << ", fused_downsample " << s_dual << "\n";
  CHECK(std::isfinite(s_dual));
  // After 300 steps the checksums drift apart as rounding differences grow, so the bound is the
  // drift measured beside it: the nudged copy's (the noise floor of the loss check) or
  // conv_bn_stats' (the same kernels without the dual pass), whichever is larger.
  const double drift = std::max(std::abs(s_nudged - s_unfused), std::abs(s_stats - s_unfused));
  CHECK(std::abs(s_dual - s_unfused) <= 3 * drift + 1e-4 * s_unfused);
}
