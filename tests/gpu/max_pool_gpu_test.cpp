// The resnet stem's max pooling on our channels-last kernels (plugins/model/resnet/ops/max_pool*)
// against ATen's at::max_pool2d: outputs and input gradients bit for bit (same winner on ties,
// NaN wins, same fp32 summation order where windows overlap), for float, fp16 and bf16, odd
// sizes and several windows; the fallback to ATen, counted; replay in a CUDA graph; and a
// ResNet50 step with `max_pool_impl: orch` that runs ours.
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "gpu/gpu_test_support.h"
#include "integration/test_support.h"
#include "max_pool.h"
#include "resnet.h"

using namespace orch;

namespace {

const auto kCl = torch::MemoryFormat::ChannelsLast;

torch::nn::MaxPool2dOptions pool_options(int k, int s, int p) {
  return torch::nn::MaxPool2dOptions(k).stride(s).padding(p);
}

/// Both implementations on the same input and incoming gradient; every result must be equal.
void check_against_aten(const torch::Tensor& x_in, const torch::nn::MaxPool2dOptions& o) {
  auto x_ours = x_in.detach().clone(kCl).requires_grad_(true);
  auto x_aten = x_in.detach().clone(kCl).requires_grad_(true);
  REQUIRE(resnet::orch_max_pool_supported(x_ours, o));
  const auto y_ours = resnet::orch_max_pool(x_ours, o);
  const auto y_aten = torch::max_pool2d(x_aten, o.kernel_size(), o.stride(), o.padding());
  REQUIRE(y_ours.sizes() == y_aten.sizes());
  CHECK(y_ours.is_contiguous(kCl));
  // equal_nan: a NaN in a window is the window's maximum in both.
  CHECK(torch::allclose(y_ours, y_aten, 0, 0, /*equal_nan=*/true));
  const auto dy = torch::randn(y_aten.sizes(), y_aten.options()).contiguous(kCl);
  y_ours.backward(dy);
  y_aten.backward(dy);
  CHECK(torch::equal(x_ours.grad(), x_aten.grad()));
  // Not trivially zero: every window's gradient lands somewhere.
  CHECK(x_ours.grad().to(torch::kFloat).abs().sum().item<double>() > 0);
}

}  // namespace

TEST_CASE("our max pooling matches ATen's bit for bit", "[gpu][max_pool]") {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  struct Case {
    std::vector<std::int64_t> shape;
    int k, s, p;
  };
  const std::vector<Case> cases = {
      {{4, 64, 112, 112}, 3, 2, 1},  // the ResNet stem at a smaller batch
      {{3, 16, 9, 11}, 3, 2, 1},     // odd sizes: the last window is clipped
      {{2, 8, 7, 7}, 3, 2, 1},       // one 16-byte group of fp16 channels
      {{2, 32, 10, 10}, 2, 2, 0},    // windows that do not overlap
      {{2, 24, 13, 9}, 3, 1, 1},     // stride 1: up to 9 windows share an input
      {{1, 16, 12, 12}, 5, 2, 2},
  };
  for (const auto dtype : {torch::kHalf, torch::kBFloat16, torch::kFloat}) {
    for (const auto& c : cases) {
      INFO(dtype << " " << torch::IntArrayRef(c.shape) << " kernel " << c.k << " stride " << c.s
                 << " padding " << c.p);
      const auto o = pool_options(c.k, c.s, c.p);
      // Continuous values, then a few levels only (ties everywhere: the first wins).
      check_against_aten(torch::randn(c.shape, opts).to(dtype), o);
      check_against_aten(torch::randint(0, 3, c.shape, opts).to(dtype), o);
      // Post-ReLU input, as in the network: many zeros.
      check_against_aten(torch::randn(c.shape, opts).relu().to(dtype), o);
    }
  }
  // NaN wins its windows, as in ATen, and its position takes the gradient.
  auto x = torch::randn({2, 16, 9, 9}, opts);
  x.index_put_({0, 3, 4, 4}, std::nan(""));
  x.index_put_({1, 7, 0, 0}, std::nan(""));
  check_against_aten(x.to(torch::kHalf), pool_options(3, 2, 1));
}

TEST_CASE("max_pool_impl: orch runs ATen's where our kernels do not take the input, counted",
          "[gpu][max_pool]") {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  torch::nn::MaxPool2d pool(pool_options(3, 2, 1));
  struct Case {
    const char* what;
    torch::Tensor x;
  };
  const std::vector<Case> refused = {
      {"fp16 with 6 channels (not 16 bytes)",
       torch::randn({2, 6, 9, 9}, opts).to(torch::kHalf).contiguous(kCl)},
      {"NCHW", torch::randn({2, 16, 9, 9}, opts).to(torch::kHalf)},
      {"double", torch::randn({2, 16, 9, 9}, opts.dtype(torch::kDouble)).contiguous(kCl)},
  };
  for (const auto& c : refused) {
    INFO(c.what);
    CHECK_FALSE(resnet::orch_max_pool_supported(c.x, pool->options));
    const auto before = resnet::max_pool_counters();
    const auto y = resnet::max_pool(*pool, c.x, resnet::MaxPoolImpl::kOrch);
    const auto after = resnet::max_pool_counters();
    CHECK(after.aten == before.aten + 1);
    CHECK(after.orch == before.orch);
    CHECK(torch::equal(y, pool->forward(c.x)));
  }
  // Dilation and ceil mode are ATen's only.
  const auto x = torch::randn({2, 16, 9, 9}, opts).to(torch::kHalf).contiguous(kCl);
  CHECK_FALSE(resnet::orch_max_pool_supported(x, pool_options(3, 2, 1).dilation(2)));
  CHECK_FALSE(resnet::orch_max_pool_supported(x, pool_options(3, 2, 1).ceil_mode(true)));
  CHECK(resnet::orch_max_pool_supported(x, pool_options(3, 2, 1)));
  const auto before = resnet::max_pool_counters();
  CHECK(torch::equal(resnet::max_pool(*pool, x, resnet::MaxPoolImpl::kOrch), pool->forward(x)));
  CHECK(resnet::max_pool_counters().orch == before.orch + 1);
}

TEST_CASE("our max pooling replays in a CUDA graph", "[gpu][max_pool]") {
  // Everything on one side stream, as the cuda-graph strategy does: the first GPU run made the
  // inputs on the default stream, and autograd's cross-stream sync for them then touched the
  // legacy stream during capture ("operation would make the legacy stream depend on a
  // capturing blocking stream").
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto o = pool_options(3, 2, 1);
  auto side = c10::cuda::getStreamFromPool();
  const c10::cuda::CUDAStreamGuard guard(side);
  auto x = torch::randn({8, 64, 56, 56}, opts).to(torch::kBFloat16).contiguous(kCl);
  x.requires_grad_(true);
  const auto y_ref = torch::max_pool2d(x, 3, 2, 1);
  const auto dy = torch::randn(y_ref.sizes(), y_ref.options()).contiguous(kCl);
  const auto dx_ref = torch::autograd::grad({y_ref}, {x}, {dy})[0];
  for (int i = 0; i < 2; ++i) torch::autograd::grad({resnet::orch_max_pool(x, o)}, {x}, {dy});
  at::cuda::CUDAGraph graph;
  graph.capture_begin();
  auto y = resnet::orch_max_pool(x, o);
  auto dx = torch::autograd::grad({y}, {x}, {dy})[0];
  graph.capture_end();
  y.zero_();
  dx.zero_();
  graph.replay();
  side.synchronize();
  CHECK(torch::equal(y, y_ref));
  CHECK(torch::equal(dx, dx_ref));
}

TEST_CASE("a ResNet50 with max_pool_impl: orch trains exactly like ATen's pooling",
          "[gpu][max_pool]") {
  // Same weights, AMP fp16, channels-last, deterministic cuDNN: the pooling is bit-identical,
  // so the logits and every gradient must be too, and the stem pools with our kernels.
  const test::DeterministicCudnn deterministic;
  torch::manual_seed(3);
  resnet::ResNetOptions o;
  o.depth = 50;
  o.num_classes = 10;
  o.max_pool_impl = resnet::MaxPoolImpl::kAten;
  resnet::ResNet aten(o);
  o.max_pool_impl = resnet::MaxPoolImpl::kOrch;
  resnet::ResNet ours(o);
  test::copy_state(*aten, *ours);
  const auto images = torch::randn({8, 3, 64, 64}, torch::kCUDA).contiguous(kCl);
  const auto labels = torch::randint(0, 10, {8}, torch::dtype(torch::kLong).device(torch::kCUDA));
  auto step = [&](resnet::ResNet& net) { return test::forward_backward(net, images, labels); };
  const auto before = resnet::max_pool_counters();
  const auto l_aten = step(aten);
  const auto mid = resnet::max_pool_counters();
  const auto l_ours = step(ours);
  const auto after = resnet::max_pool_counters();
  CHECK(mid.aten == before.aten + 1);
  CHECK(after.orch == mid.orch + 1);
  CHECK(after.aten == mid.aten);
  CHECK(torch::equal(l_aten, l_ours));
  auto grads = aten->named_parameters();
  for (const auto& p : ours->named_parameters()) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
    CHECK(torch::equal(p.value().grad(), grads[p.key()].grad()));
  }
}
