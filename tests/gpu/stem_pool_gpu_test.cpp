// The resnet stem's batch-norm + ReLU + max pooling in one (`fused_stem`, plugins/model/resnet/
// ops/stem_pool*) against the path it replaces, fused_bn_relu then our max pooling: the output
// and the running statistics bit for bit (same statistics kernels, same rounding before the max,
// same winners), and the gradients as close to an fp32 reference as the unfused path's; the
// fallback, counted; replay in a CUDA graph; and a ResNet50 step whose logits and every gradient
// above the stem are bit for bit those without it.
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "fused_bn.h"
#include "gpu/gpu_test_support.h"
#include "integration/test_support.h"
#include "max_pool.h"
#include "resnet.h"
#include "stem_pool.h"

using namespace orch;

namespace {

const auto kCl = torch::MemoryFormat::ChannelsLast;

struct Result {
  torch::Tensor y, dx, dw, db, running_mean, running_var;
};

/// Batch-norm parameters and running statistics away from the identity, on the GPU.
struct Bn {
  torch::Tensor w, b, rm, rv;
  explicit Bn(std::int64_t C) {
    const auto f = torch::TensorOptions().device(torch::kCUDA);
    w = torch::rand({C}, f) + 0.5;
    w.index_put_({0}, -0.7);  // a negative scale: the pooling must take the largest y, not x
    b = torch::randn({C}, f) * 0.3;
    rm = torch::randn({C}, f);
    rv = torch::rand({C}, f) + 0.5;
  }
};

enum class Path { kFused, kUnfused, kReference };

/// One forward + backward of pool(relu(bn(x))) with the incoming gradient dy: our fused stem,
/// fused_bn_relu + our max pooling, or ATen's ops in fp32 (the reference).
Result run(Path path, const torch::Tensor& x_in, const Bn& bn, const torch::nn::MaxPool2dOptions& o,
           const torch::Tensor& dy) {
  const bool ref = path == Path::kReference;
  auto x = (ref ? x_in.to(torch::kFloat) : x_in).detach().clone(kCl).requires_grad_(true);
  auto w = bn.w.clone().requires_grad_(true);
  auto b = bn.b.clone().requires_grad_(true);
  Result r{{}, {}, {}, {}, bn.rm.clone(), bn.rv.clone()};
  if (path == Path::kFused) {
    r.y = resnet::stem_bn_relu_pool_training(x, w, b, r.running_mean, r.running_var, 0.1, 1e-5, o);
  } else if (path == Path::kUnfused) {
    const auto a =
        resnet::fused_bn_relu_training(x, {}, w, b, r.running_mean, r.running_var, 0.1, 1e-5);
    r.y = resnet::orch_max_pool(a, o);
  } else {
    const auto a =
        torch::batch_norm(x, w, b, r.running_mean, r.running_var, true, 0.1, 1e-5, false).relu();
    r.y = torch::max_pool2d(a, o.kernel_size(), o.stride(), o.padding());
  }
  r.y.backward(ref ? dy.to(torch::kFloat) : dy);
  r.dx = x.grad().to(torch::kFloat);
  r.dw = w.grad();
  r.db = b.grad();
  return r;
}

double rel_err(const torch::Tensor& a, const torch::Tensor& ref) {
  return (a.to(torch::kFloat) - ref).norm().item<double>() / (ref.norm().item<double>() + 1e-12);
}

void check_case(const torch::Tensor& x, const torch::nn::MaxPool2dOptions& o) {
  const Bn bn(x.size(1));
  auto probe = torch::nn::BatchNorm2d(x.size(1));
  probe->to(torch::kCUDA);
  REQUIRE(resnet::stem_pool_supported(x.contiguous(kCl), *probe, o));
  const auto y_shape =
      torch::max_pool2d(x.to(torch::kFloat), o.kernel_size(), o.stride(), o.padding()).sizes();
  const auto dy = torch::randn(y_shape, x.options()).contiguous(kCl);
  const auto fused = run(Path::kFused, x, bn, o, dy);
  const auto unfused = run(Path::kUnfused, x, bn, o, dy);
  const auto ref = run(Path::kReference, x, bn, o, dy);
  CHECK(fused.y.is_contiguous(kCl));
  CHECK(torch::equal(fused.y, unfused.y));
  CHECK(torch::equal(fused.running_mean, unfused.running_mean));
  CHECK(torch::equal(fused.running_var, unfused.running_var));
  // The gradients: no farther from fp32 than the unfused path (which rounds a pixel's summed
  // gradient to the dtype first), and close in absolute terms. The bounds are set by
  // batch-norm's dx, dy less two per-channel means (a difference of near-equal sums, rounded
  // to the dtype): on both paths alike it lands about 1.6% from fp32 in fp16 and 9% in bf16
  // (8-bit mantissa) at the small channels here.
  const double tol = x.scalar_type() == torch::kHalf ? 3e-2 : 1e-1;
  const std::pair<const char*, std::pair<torch::Tensor, torch::Tensor>> grads[] = {
      {"dx", {fused.dx, unfused.dx}},
      {"dweight", {fused.dw, unfused.dw}},
      {"dbias", {fused.db, unfused.db}}};
  const torch::Tensor refs[] = {ref.dx, ref.dw, ref.db};
  for (int i = 0; i < 3; ++i) {
    const double e_fused = rel_err(grads[i].second.first, refs[i]);
    const double e_unfused = rel_err(grads[i].second.second, refs[i]);
    INFO(grads[i].first << ": fused " << e_fused << ", unfused " << e_unfused);
    CHECK(e_fused < tol);
    CHECK(e_fused <= 1.5 * e_unfused + 1e-3);
  }
  CHECK(fused.dx.abs().sum().item<double>() > 0);
}

}  // namespace

TEST_CASE("the fused stem gives fused_bn + max pooling's output bit for bit, its gradients",
          "[gpu][stem_pool]") {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  struct Case {
    std::vector<std::int64_t> shape;
    int k, s, p;
  };
  const std::vector<Case> cases = {
      {{4, 64, 112, 112}, 3, 2, 1},  // the ResNet stem at a smaller batch
      {{3, 16, 9, 11}, 3, 2, 1},     // odd sizes: the last window is clipped
      {{2, 8, 7, 7}, 3, 2, 1},       // one 16-byte group of channels
      {{2, 32, 10, 10}, 2, 2, 0},    // windows that do not overlap
      {{2, 24, 13, 9}, 3, 1, 1},     // stride 1: up to 9 windows share a pixel
  };
  for (const auto dtype : {torch::kHalf, torch::kBFloat16}) {
    for (const auto& c : cases) {
      INFO(dtype << " " << torch::IntArrayRef(c.shape) << " kernel " << c.k << " stride " << c.s
                 << " padding " << c.p);
      const auto o = torch::nn::MaxPool2dOptions(c.k).stride(c.s).padding(c.p);
      check_case((torch::randn(c.shape, opts) * 2 + 0.5).to(dtype).contiguous(kCl), o);
      // A few levels only: ties in every window (the first wins, as in the unfused path).
      check_case(torch::randint(0, 4, c.shape, opts).to(dtype).contiguous(kCl), o);
    }
  }
}

TEST_CASE("stem_bn_relu_pool runs fused_bn_relu + max_pool where the fused stem does not apply",
          "[gpu][stem_pool]") {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  torch::nn::MaxPool2d pool(torch::nn::MaxPool2dOptions(3).stride(2).padding(1));
  struct Case {
    const char* what;
    torch::Tensor x;
    bool train;
  };
  const std::vector<Case> cases = {
      {"fp32", torch::randn({2, 16, 9, 9}, opts).contiguous(kCl), true},
      {"NCHW fp16", torch::randn({2, 16, 9, 9}, opts).to(torch::kHalf), true},
      {"eval mode", torch::randn({2, 16, 9, 9}, opts).to(torch::kHalf).contiguous(kCl), false},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    torch::manual_seed(5);
    torch::nn::BatchNorm2d a(16), b(16);
    a->to(torch::kCUDA);
    b->to(torch::kCUDA);
    a->train(c.train);
    b->train(c.train);
    const auto before = resnet::stem_pool_counters();
    const auto y = resnet::stem_bn_relu_pool(*a, *pool, c.x, resnet::FusedBnImpl::kOrch,
                                             resnet::MaxPoolImpl::kOrch);
    const auto after = resnet::stem_pool_counters();
    CHECK(after.unfused == before.unfused + 1);
    CHECK(after.fused == before.fused);
    const auto expected =
        resnet::max_pool(*pool, resnet::fused_bn_relu(*b, c.x), resnet::MaxPoolImpl::kOrch);
    CHECK(torch::equal(y, expected));
    CHECK(torch::equal(a->running_mean, b->running_mean));
  }
  // The module entry point on an input it takes: fused, num_batches_tracked counted.
  torch::nn::BatchNorm2d bn(64);
  bn->to(torch::kCUDA);
  const auto x = torch::randn({2, 64, 16, 16}, opts).to(torch::kHalf).contiguous(kCl);
  const auto before = resnet::stem_pool_counters();
  resnet::stem_bn_relu_pool(*bn, *pool, x, resnet::FusedBnImpl::kOrch, resnet::MaxPoolImpl::kOrch);
  CHECK(resnet::stem_pool_counters().fused == before.fused + 1);
  CHECK(bn->num_batches_tracked.item<std::int64_t>() == 1);
}

TEST_CASE("the fused stem replays in a CUDA graph", "[gpu][stem_pool]") {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto o = torch::nn::MaxPool2dOptions(3).stride(2).padding(1);
  auto side = c10::cuda::getStreamFromPool();
  const c10::cuda::CUDAStreamGuard guard(side);
  auto x = torch::randn({8, 64, 56, 56}, opts).to(torch::kBFloat16).contiguous(kCl);
  x.requires_grad_(true);
  const Bn bn(64);
  auto w = bn.w.clone().requires_grad_(true);
  auto b = bn.b.clone().requires_grad_(true);
  auto rm = bn.rm.clone(), rv = bn.rv.clone();
  const auto step = [&] {
    auto y = resnet::stem_bn_relu_pool_training(x, w, b, rm, rv, 0.1, 1e-5, o);
    const auto dy = torch::ones_like(y);
    auto g = torch::autograd::grad({y}, {x, w, b}, {dy});
    return std::vector<torch::Tensor>{y, g[0], g[1], g[2]};
  };
  const auto eager = step();
  for (int i = 0; i < 2; ++i) step();
  at::cuda::CUDAGraph graph;
  graph.capture_begin();
  auto captured = step();
  graph.capture_end();
  for (auto& t : captured) t.zero_();
  graph.replay();
  side.synchronize();
  for (std::size_t i = 0; i < eager.size(); ++i) {
    INFO("output " << i);
    CHECK(torch::equal(captured[i], eager[i]));
  }
}

TEST_CASE("a ResNet50 with fused_stem computes the same logits and gradients above the stem",
          "[gpu][stem_pool]") {
  // Same weights, AMP fp16, channels-last, deterministic cuDNN: the fused stem's output is bit
  // for bit the unfused one's, so are the logits and every gradient the backward computes before
  // it reaches the stem; the stem's own (bn1 and conv1) differ only in rounding.
  const test::DeterministicCudnn deterministic;
  torch::manual_seed(3);
  resnet::ResNetOptions o;
  o.depth = 50;
  o.num_classes = 10;
  o.fused_bn = true;
  o.fused_bn_impl = resnet::FusedBnImpl::kOrch;
  resnet::ResNet plain(o);
  o.fused_stem = true;
  resnet::ResNet fused(o);
  test::copy_state(*plain, *fused);
  const auto images = torch::randn({8, 3, 64, 64}, torch::kCUDA).contiguous(kCl);
  const auto labels = torch::randint(0, 10, {8}, torch::dtype(torch::kLong).device(torch::kCUDA));
  const auto before = resnet::stem_pool_counters();
  const auto l_plain = test::forward_backward(plain, images, labels);
  const auto l_fused = test::forward_backward(fused, images, labels);
  CHECK(resnet::stem_pool_counters().fused == before.fused + 1);
  CHECK(torch::equal(l_plain, l_fused));
  CHECK(torch::equal(plain->bn1->running_mean, fused->bn1->running_mean));
  auto grads = plain->named_parameters();
  for (const auto& p : fused->named_parameters()) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
    const auto& other = grads[p.key()].grad();
    if (p.key() == "conv1.weight" || p.key() == "bn1.weight" || p.key() == "bn1.bias") {
      CHECK(rel_err(p.value().grad(), other.to(torch::kFloat)) < 1e-2);
    } else {
      CHECK(torch::equal(p.value().grad(), other));
    }
  }
}
