// `conv_bn_stats` (plugins/model/resnet/ops/conv_bn_from_stats.h) on the GPU: a convolution
// whose epilogue computes the batch-norm's statistics (cuDNN's graph API) and our kernels
// applying the batch-norm from them, against an fp32 reference of conv + batch-norm (+ add) +
// ReLU (outputs, every gradient, running statistics) for ResNet50's kinds of convolution; the
// inputs it leaves to the usual path (bf16, eval), counted; replay in a CUDA graph; and whole
// ResNet50s: every block pair taken, one step's gradients within the noise floor of two valid
// fused_bn runs (the identity blocks' conv1 still adding onto the shortcut's gradient), and a
// 100-step fp16 loss curve within the noise.
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <iostream>
#include <sstream>
#include <vector>

#include "conv_bn_from_stats.h"
#include "fused_bn.h"
#include "gpu/gpu_test_support.h"
#include "integration/test_support.h"
#include "residual_grad.h"
#include "resnet.h"

using namespace orch;
using test::Autocast;
using test::to_channels_last;

namespace {

const auto kCl = torch::MemoryFormat::ChannelsLast;

/// |a - b| / |b| over whole tensors, in fp32.
double rel(const torch::Tensor& a, const torch::Tensor& b) {
  const auto af = a.to(torch::kFloat), bf = b.to(torch::kFloat);
  return (af - bf).norm().item<double>() / (bf.norm().item<double>() + 1e-12);
}

struct ConvCase {
  std::int64_t n, c, h, k, r, stride, pad;
  bool residual;
};

std::string describe(const ConvCase& c) {
  std::ostringstream s;
  s << "x " << c.n << "x" << c.c << "x" << c.h << "x" << c.h << ", w " << c.k << "x" << c.c << "x"
    << c.r << "x" << c.r << " stride " << c.stride << " pad " << c.pad
    << (c.residual ? " + residual" : "");
  return s.str();
}

torch::nn::Conv2d cuda_conv(const ConvCase& c) {
  torch::nn::Conv2d conv(
      torch::nn::Conv2dOptions(c.c, c.k, c.r).stride(c.stride).padding(c.pad).bias(false));
  conv->to(torch::kCUDA);
  to_channels_last(*conv);
  return conv;
}

/// Three ResNet50s (10 classes) with the same weights: fused_bn alone with our batch-norm
/// kernels (the reference), fused_bn with cuDNN's batch-norm (another correct implementation:
/// the noise floor) and conv_bn_stats.
struct ThreeNets {
  resnet::ResNetOptions options;  // plain's
  resnet::ResNet plain, other, stats;
};

ThreeNets three_nets(bool fused_residual_grad) {
  resnet::ResNetOptions o;
  o.depth = 50;
  o.num_classes = 10;
  o.fused_bn = true;
  o.fused_residual_grad = fused_residual_grad;
  const resnet::ResNetOptions plain_options = o;
  resnet::ResNet plain(o);
  o.fused_bn_impl = resnet::FusedBnImpl::kCudnn;
  resnet::ResNet other(o);
  o.fused_bn_impl = resnet::FusedBnImpl::kOrch;
  o.conv_bn_stats = true;
  resnet::ResNet stats(o);
  test::copy_state(*plain, *stats);
  test::copy_state(*plain, *other);
  return {plain_options, plain, other, stats};
}

}  // namespace

TEST_CASE(
    "conv_bn_relu_from_stats: conv + batch-norm (+ add) + ReLU from the convolution's statistics",
    "[gpu][conv_bn_from_stats]") {
  // ResNet50's kinds of convolution (1x1 reduce, 3x3, strided 3x3, 1x1 expand with the
  // residual, the last stage) at small batches, fp16 channels-last.
  const std::vector<ConvCase> cases = {
      {8, 64, 56, 64, 1, 1, 0, false},   {8, 64, 56, 64, 3, 1, 1, false},
      {8, 128, 56, 128, 3, 2, 1, false}, {8, 64, 56, 256, 1, 1, 0, true},
      {16, 512, 7, 2048, 1, 1, 0, true}, {32, 256, 14, 256, 3, 1, 1, false}};
  torch::manual_seed(31);
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  for (const auto& cc : cases) {
    INFO(describe(cc));
    auto conv = cuda_conv(cc);
    auto bn = test::cuda_bn_away_from_identity(cc.k);
    const auto rm0 = bn->running_mean.clone(), rv0 = bn->running_var.clone();
    const std::int64_t p = (cc.h + 2 * cc.pad - cc.r) / cc.stride + 1;
    auto x = (torch::randn({cc.n, cc.c, cc.h, cc.h}, opts) + 0.3).to(torch::kHalf).contiguous(kCl);
    auto res = cc.residual ? torch::randn({cc.n, cc.k, p, p}, opts).to(torch::kHalf).contiguous(kCl)
                           : torch::Tensor();
    const auto dy = torch::randn({cc.n, cc.k, p, p}, opts).to(torch::kHalf).contiguous(kCl);
    x.requires_grad_(true);
    if (res.defined()) res.requires_grad_(true);

    const auto before = resnet::conv_bn_from_stats_counters();
    const auto fb_before = resnet::fused_bn_counters();
    bool unfused_called = false;
    auto y = resnet::conv_bn_relu_from_stats(
        *conv, *bn, x, res, resnet::FusedBnImpl::kOrch, {}, {}, [&] {
          unfused_called = true;
          return at::conv2d(x, conv->weight.to(torch::kHalf), {}, cc.stride, cc.pad);
        });
    const auto after = resnet::conv_bn_from_stats_counters();
    REQUIRE(after.taken - before.taken == 1);  // cuDNN's graph API takes every ResNet50 shape
    CHECK(after.fallback == before.fallback);
    CHECK_FALSE(unfused_called);
    CHECK(resnet::fused_bn_counters().from_sums - fb_before.from_sums == 1);
    CHECK(bn->num_batches_tracked.item<std::int64_t>() == 1);
    REQUIRE(y.scalar_type() == torch::kHalf);
    REQUIRE(y.is_contiguous(kCl));
    y.backward(dy);

    // The reference in fp32 from the same rounded inputs and the fp16-rounded weight.
    auto xr = x.detach().to(torch::kFloat).requires_grad_(true);
    auto wr = conv->weight.detach().to(torch::kHalf).to(torch::kFloat).requires_grad_(true);
    auto bw = bn->weight.detach().clone().requires_grad_(true);
    auto bb = bn->bias.detach().clone().requires_grad_(true);
    auto rr = res.defined() ? res.detach().to(torch::kFloat).requires_grad_(true) : torch::Tensor();
    auto rm = rm0.clone(), rv = rv0.clone();
    auto pre = at::batch_norm(at::conv2d(xr, wr, {}, cc.stride, cc.pad), bw, bb, rm, rv, true, 0.1,
                              1e-5, false);
    if (rr.defined()) pre = pre + rr;
    const auto yr = pre.relu();
    INFO("rel |y - ref| " << rel(y, yr));
    CHECK(rel(y, yr) < 5e-3);
    // ReLU's mask from the fused output, as our backward takes it; it agrees almost everywhere.
    const auto mask = y.detach().to(torch::kFloat) > 0;
    CHECK((mask == (yr > 0)).to(torch::kFloat).mean().item<double>() > 0.999);
    const auto g = dy.to(torch::kFloat) * mask.to(torch::kFloat);
    pre.backward(g);
    INFO("rel dx " << rel(x.grad(), xr.grad()) << ", dw " << rel(conv->weight.grad(), wr.grad())
                   << ", dgamma " << rel(bn->weight.grad(), bw.grad()) << ", dbeta "
                   << rel(bn->bias.grad(), bb.grad()));
    CHECK(x.grad().scalar_type() == torch::kHalf);
    CHECK(conv->weight.grad().scalar_type() == torch::kFloat);  // the parameter's own dtype
    CHECK(rel(x.grad(), xr.grad()) < 1e-2);
    CHECK(rel(conv->weight.grad(), wr.grad()) < 1e-2);
    CHECK(rel(bn->weight.grad(), bw.grad()) < 1e-2);
    CHECK(rel(bn->bias.grad(), bb.grad()) < 1e-2);
    if (res.defined()) CHECK(rel(res.grad(), rr.grad()) < 1e-2);
    // Running statistics: momentum 0.1 and the unbiased variance, like BatchNorm2d's.
    INFO("rel running_mean " << rel(bn->running_mean, rm) << ", running_var "
                             << rel(bn->running_var, rv));
    CHECK(rel(bn->running_mean, rm) < 1e-3);
    CHECK(rel(bn->running_var, rv) < 1e-3);
  }
}

TEST_CASE("conv_bn_relu_from_stats runs the usual way for bf16 and in eval, counted, same results",
          "[gpu][conv_bn_from_stats]") {
  torch::manual_seed(32);
  const ConvCase cc{4, 64, 28, 128, 3, 1, 1, false};
  auto conv = cuda_conv(cc);
  auto bn_a = test::cuda_bn_away_from_identity(cc.k);
  torch::nn::BatchNorm2d bn_b(cc.k);
  bn_b->to(torch::kCUDA);
  test::copy_state(*bn_a, *bn_b);
  const auto x = torch::randn({cc.n, cc.c, cc.h, cc.h}, torch::kCUDA);
  for (const bool training : {true, false}) {
    INFO((training ? "training, bf16" : "eval, fp16"));
    bn_a->train(training);
    bn_b->train(training);
    const auto dtype = training ? torch::kBFloat16 : torch::kHalf;
    const auto xin = x.to(dtype).contiguous(kCl);
    const auto w = conv->weight.to(dtype);
    const auto before = resnet::conv_bn_from_stats_counters();
    const auto y =
        resnet::conv_bn_relu_from_stats(*conv, *bn_a, xin, {}, resnet::FusedBnImpl::kCudnn, {}, {},
                                        [&] { return at::conv2d(xin, w, {}, 1, 1); });
    const auto after = resnet::conv_bn_from_stats_counters();
    CHECK(after.fallback - before.fallback == 1);
    CHECK(after.taken == before.taken);
    // What the caller would have run without conv_bn_stats.
    const auto expected =
        resnet::fused_bn_relu(*bn_b, at::conv2d(xin, w, {}, 1, 1), {}, resnet::FusedBnImpl::kCudnn);
    CHECK(torch::allclose(y.to(torch::kFloat), expected.to(torch::kFloat), 1e-3, 1e-3));
    CHECK(torch::allclose(bn_a->running_mean, bn_b->running_mean));
  }
}

TEST_CASE("conv_bn_relu_from_stats forward and backward replay in a CUDA graph",
          "[gpu][conv_bn_from_stats]") {
  torch::manual_seed(33);
  const ConvCase cc{16, 256, 14, 256, 3, 1, 1, true};
  auto conv = cuda_conv(cc);
  auto bn = test::cuda_bn_away_from_identity(cc.k);
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  auto x = torch::randn({cc.n, cc.c, cc.h, cc.h}, opts).to(torch::kHalf).contiguous(kCl);
  auto res = torch::randn({cc.n, cc.k, cc.h, cc.h}, opts).to(torch::kHalf).contiguous(kCl);
  const auto dy = torch::randn({cc.n, cc.k, cc.h, cc.h}, opts).to(torch::kHalf).contiguous(kCl);
  x.requires_grad_(true);
  res.requires_grad_(true);
  auto forward = [&] {
    return resnet::conv_bn_relu_from_stats(*conv, *bn, x, res, resnet::FusedBnImpl::kOrch, {}, {},
                                           [&] {
                                             FAIL("the usual path was taken");
                                             return torch::Tensor();
                                           });
  };
  auto side = c10::cuda::getStreamFromPool();
  c10::cuda::getCurrentCUDAStream().synchronize();
  at::cuda::CUDAGraph graph;
  {
    const c10::cuda::CUDAStreamGuard guard(side);
    torch::Tensor y_eager;
    std::vector<torch::Tensor> eager;
    for (int i = 0; i < 3; ++i) {  // warm-up on the capture stream (builds cuDNN's plan)
      y_eager = forward();
      eager = torch::autograd::grad({y_eager}, {x, res, conv->weight, bn->weight}, {dy});
    }
    graph.capture_begin();
    const auto y = forward();
    const auto grads = torch::autograd::grad({y}, {x, res, conv->weight, bn->weight}, {dy});
    graph.capture_end();
    const auto rm_before = bn->running_mean.clone();
    graph.replay();
    side.synchronize();
    // Same inputs, so the replay gives the eager step's results (the statistics' summation
    // order may differ between cuDNN's blocks: allclose, not equal).
    CHECK(torch::allclose(y.to(torch::kFloat), y_eager.to(torch::kFloat), 1e-3, 1e-3));
    for (std::size_t i = 0; i < grads.size(); ++i) {
      INFO("gradient " << i << ": rel " << rel(grads[i], eager[i]));
      CHECK(rel(grads[i], eager[i]) < 1e-3);
    }
    CHECK_FALSE(torch::equal(bn->running_mean, rm_before));
  }
  side.synchronize();
}

TEST_CASE("a ResNet50 with conv_bn_stats takes every block pair, within fused_bn's noise",
          "[gpu][conv_bn_from_stats]") {
  // One fp16 training step of three ResNet50s with the same weights: fused_bn alone (our
  // batch-norm kernels: the reference), fused_bn with cuDNN's batch-norm (another correct
  // implementation: how far two valid fp16 runs of this network differ, the noise floor), and
  // conv_bn_stats. At batch 16, 64x64, the noise floor is large (logits a few percent apart;
  // per-parameter gradients 25-50%, fp16 rounding amplified through 50 layers of batch-norm
  // backward), so absolute tolerances say nothing; conv_bn_stats must stay within
  // twice the floor, per parameter, per running statistic and for the whole gradient.
  const test::DeterministicCudnn deterministic;
  torch::manual_seed(34);
  ThreeNets nets = three_nets(/*fused_residual_grad=*/true);
  auto &plain = nets.plain, &other = nets.other, &stats = nets.stats;
  const auto images = torch::randn({16, 3, 64, 64}, torch::kCUDA).contiguous(kCl);
  const auto labels = torch::randint(0, 10, {16}, torch::dtype(torch::kLong).device(torch::kCUDA));
  auto step = [&](resnet::ResNet& net) { return test::forward_backward(net, images, labels); };
  const auto l_plain = step(plain);
  const auto l_other = step(other);
  const auto before = resnet::conv_bn_from_stats_counters();
  const auto rg_before = resnet::residual_grad_counters();
  const auto l_stats = step(stats);
  const auto after = resnet::conv_bn_from_stats_counters();
  const auto rg_after = resnet::residual_grad_counters();
  CHECK(after.taken - before.taken == 48);  // 16 bottlenecks x 3 convolution + batch-norm pairs
  CHECK(after.fallback == before.fallback);
  CHECK(rg_after.accumulated - rg_before.accumulated == 12);  // the identity blocks' conv1
  const double logits_noise = rel(l_other, l_plain);
  std::cout << "rel logits: conv_bn_stats " << rel(l_stats, l_plain) << ", noise floor "
            << logits_noise << "\n";
  INFO("rel logits " << rel(l_stats, l_plain) << ", noise floor " << logits_noise);
  CHECK(rel(l_stats, l_plain) <= 2 * logits_noise + 1e-3);

  auto ref_grads = plain->named_parameters();
  auto other_grads = other->named_parameters();
  std::vector<torch::Tensor> all_ref, all_other, all_stats;
  for (const auto& p : stats->named_parameters()) {
    REQUIRE(p.value().grad().defined());
    const auto& g_ref = ref_grads[p.key()].grad();
    const double noise = rel(other_grads[p.key()].grad(), g_ref);
    INFO(p.key() << ": rel " << rel(p.value().grad(), g_ref) << ", noise floor " << noise);
    CHECK(rel(p.value().grad(), g_ref) <= 2 * noise + 0.02);
    all_ref.push_back(g_ref.flatten().to(torch::kFloat));
    all_other.push_back(other_grads[p.key()].grad().flatten().to(torch::kFloat));
    all_stats.push_back(p.value().grad().flatten().to(torch::kFloat));
  }
  const auto g_ref = torch::cat(all_ref);
  const double whole = rel(torch::cat(all_stats), g_ref),
               whole_noise = rel(torch::cat(all_other), g_ref);
  std::cout << "rel whole gradient: conv_bn_stats " << whole << ", noise floor " << whole_noise
            << "\n";
  CHECK(whole <= 1.5 * whole_noise + 0.01);

  auto ref_buffers = plain->named_buffers();
  auto other_buffers = other->named_buffers();
  double worst = 0;
  for (const auto& b : stats->named_buffers()) {
    if (b.key().find("running_") == std::string::npos) continue;
    const double noise = rel(other_buffers[b.key()], ref_buffers[b.key()]);
    const double r = rel(b.value(), ref_buffers[b.key()]);
    worst = std::max(worst, r / (noise + 1e-6));
    INFO(b.key() << ": rel " << r << ", noise floor " << noise);
    CHECK(r <= 2 * noise + 1e-3);
  }
  std::cout << "running statistics: worst ratio to the noise floor " << worst << "\n";
}

TEST_CASE("a ResNet50 with conv_bn_stats trains like fused_bn alone for 100 fp16 steps",
          "[gpu][conv_bn_from_stats]") {
  // As "a fused ResNet50 trains like the unfused one for 100 steps" (fused_bn_gpu_test.cpp),
  // in fp16 (conv_bn_stats' dtype): the conv_bn_stats run must stay as close to fused_bn
  // alone's, within three times, as the farther of two equally valid runs: fused_bn from
  // weights nudged by 1e-3, and fused_bn with cuDNN's batch-norm. (Against the nudged run
  // alone, conv_bn_stats - other convolution kernels and batch-norm kernels - passed some runs
  // and failed others, training faster; the nudge is a smaller perturbation than other kernels.)
  torch::manual_seed(35);
  ThreeNets nets = three_nets(/*fused_residual_grad=*/false);
  // Made after the other three: nudge_parameters draws from the CPU generator after the same
  // four initialisations as before, and copy_state overwrites this one's own.
  auto &plain = nets.plain, &other = nets.other, &stats = nets.stats;
  resnet::ResNet nudged(nets.options);
  test::copy_state(*plain, *nudged);
  test::nudge_parameters(*nudged);
  for (resnet::ResNet* net : {&plain, &nudged, &other, &stats}) {
    (*net)->to(torch::kCUDA);
    to_channels_last(**net);
  }
  const auto batches = test::small_batches();
  auto train = [&](resnet::ResNet& net) {
    return test::train_100_steps(net, batches, torch::kHalf);
  };
  const auto l_plain = train(plain);
  const auto l_nudged = train(nudged);
  const auto l_other = train(other);
  const auto before = resnet::conv_bn_from_stats_counters();
  const auto l_stats = train(stats);
  const auto after = resnet::conv_bn_from_stats_counters();
  CHECK(after.taken - before.taken == 48 * 100);
  test::check_loss_curve_within_noise(l_plain, l_nudged, l_stats, l_other);
  CHECK(stats->named_buffers()["layer4.2.bn3.num_batches_tracked"].item<std::int64_t>() == 100);
}
