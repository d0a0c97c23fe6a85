// The resnet model's `max_pool_impl` on the CPU: declared, and (our kernels being CUDA-only)
// ATen's pooling, counted, with the same numbers; and the kernels' index arithmetic
// (max_pool_index.h, shared with the GPU code) driving a scalar pooling that must reproduce
// ATen's values, winners and gradients. The CUDA kernels themselves are compared with ATen's
// bit for bit in tests/gpu/max_pool_gpu_test.cpp.
#include "max_pool.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "integration/test_support.h"
#include "max_pool_index.h"

using namespace orch;

TEST_CASE("resnet declares max_pool_impl: aten or orch, orch by default, unhashed at default",
          "[resnet][max_pool]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "resnet");
  REQUIRE(info != nullptr);
  const ParamSpec* impl = nullptr;
  for (const auto& p : info->params) {
    if (p.name == "max_pool_impl") impl = &p;
  }
  REQUIRE(impl != nullptr);
  CHECK(impl->type == ParamType::kString);
  CHECK(std::get<std::string>(impl->default_value) == "orch");  // measured faster, same results
  REQUIRE(impl->allowed.size() == 2);
  CHECK(std::get<std::string>(impl->allowed[0]) == "aten");
  CHECK(std::get<std::string>(impl->allowed[1]) == "orch");
  CHECK(impl->hash_exempt_at_default());  // added after resnet results were recorded
  CHECK_FALSE(impl->doc.empty());
  CHECK(resnet::max_pool_impl_from_string("orch") == resnet::MaxPoolImpl::kOrch);
  CHECK(resnet::max_pool_impl_from_string("aten") == resnet::MaxPoolImpl::kAten);
  CHECK(std::string(resnet::to_string(resnet::MaxPoolImpl::kOrch)) == "orch");
  CHECK_THROWS_WITH(resnet::max_pool_impl_from_string("cudnn"),
                    Catch::Matchers::Contains("not one of aten, orch"));
}

TEST_CASE("max_pool_impl: orch runs ATen's pooling on the CPU, counted", "[resnet][max_pool]") {
  torch::nn::MaxPool2d pool(torch::nn::MaxPool2dOptions(3).stride(2).padding(1));
  auto x = torch::randn({2, 16, 9, 11}).contiguous(torch::MemoryFormat::ChannelsLast);
  x.requires_grad_(true);
  CHECK_FALSE(resnet::orch_max_pool_supported(x, pool->options));
  const auto before = resnet::max_pool_counters();
  const auto y = resnet::max_pool(*pool, x, resnet::MaxPoolImpl::kOrch);
  const auto after = resnet::max_pool_counters();
  CHECK(after.aten == before.aten + 1);
  CHECK(after.orch == before.orch);
  CHECK(torch::equal(y, torch::max_pool2d(x, 3, 2, 1)));
  CHECK(y.sizes() == torch::IntArrayRef({2, 16, 5, 6}));
  y.sum().backward();  // ATen's autograd: every window's winner gets a 1
  CHECK(x.grad().sum().item<double>() == Approx(2 * 16 * 5 * 6));
  // The raw function refuses, naming the input.
  CHECK_THROWS_WITH(resnet::orch_max_pool(x, pool->options),
                    Catch::Matchers::Contains("an input our kernels do not take"));
}

TEST_CASE("a resnet with max_pool_impl: orch computes what the default one does on the CPU",
          "[resnet][max_pool]") {
  auto make = [](const std::string& impl) {
    return test::built_plugins().create_model(
        test::choice("resnet", {{"depth", std::int64_t{18}}, {"max_pool_impl", impl}}),
        {10, {3, 32, 32}});
  };
  torch::manual_seed(5);
  auto aten = make("aten");
  auto ours = make("orch");
  test::copy_state(aten->module(), ours->module());
  const auto images = torch::randn({2, 3, 32, 32});
  CHECK(torch::equal(aten->forward(images), ours->forward(images)));
  CHECK_THROWS_WITH(make("cudnn"), Catch::Matchers::Contains("max_pool_impl"));
}

namespace {

namespace mp = resnet::max_pool_kernels;

/// What the kernels compute, one channel at a time on the CPU, with their own index code:
/// the forward's maxima and winners (as ATen's flat h * w index), and the backward's gradient.
struct Scalar {
  torch::Tensor y, indices, dx;
};

Scalar scalar_pool(const torch::Tensor& x, const torch::Tensor& dy, int k, int s, int p,
                   std::uint32_t groups) {
  const auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  mp::Dims d;
  d.n = static_cast<std::uint32_t>(n);
  d.h = static_cast<std::uint32_t>(h);
  d.w = static_cast<std::uint32_t>(w);
  d.out_h = static_cast<std::uint32_t>((h + 2 * p - k) / s + 1);
  d.out_w = static_cast<std::uint32_t>((w + 2 * p - k) / s + 1);
  d.groups = groups;
  d.kernel = k;
  d.stride = s;
  d.padding = p;
  const std::int64_t per = c / groups;  // channels one thread handles
  auto X = x.accessor<double, 4>();
  auto DY = dy.accessor<double, 4>();
  Scalar out{torch::empty({n, c, d.out_h, d.out_w}, torch::kDouble),
             torch::empty({n, c, d.out_h, d.out_w}, torch::kLong), torch::empty_like(x)};
  auto Y = out.y.accessor<double, 4>();
  auto I = out.indices.accessor<std::int64_t, 4>();
  auto DX = out.dx.accessor<double, 4>();
  std::vector<std::uint8_t> where(static_cast<std::size_t>(n * c * d.out_h * d.out_w));
  const auto where_at = [&](std::int64_t b, std::int64_t ch, std::int64_t oh,
                            std::int64_t ow) -> std::uint8_t& {
    return where[static_cast<std::size_t>(((b * c + ch) * d.out_h + oh) * d.out_w + ow)];
  };
  for (std::uint32_t i = 0; i < d.n * d.out_h * d.out_w * groups; ++i) {
    const mp::Place at = mp::place_of(i, groups, d.out_h, d.out_w);
    REQUIRE(at.pixel == (at.n * d.out_h + at.row) * d.out_w + at.col);
    const mp::Window win =
        mp::window_of(static_cast<std::int32_t>(at.row), static_cast<std::int32_t>(at.col), d);
    for (std::int64_t ch = at.group * per; ch < (at.group + 1) * per; ++ch) {
      double best = -std::numeric_limits<double>::infinity();
      std::uint8_t pos = mp::position(win.hs, win.ws, win.h0, win.w0, k);
      for (std::int32_t ih = win.hs; ih < win.he; ++ih)
        for (std::int32_t iw = win.ws; iw < win.we; ++iw) {
          const double v = X[at.n][ch][ih][iw];
          if (v > best || std::isnan(v)) {
            best = v;
            pos = mp::position(ih, iw, win.h0, win.w0, k);
          }
        }
      Y[at.n][ch][at.row][at.col] = best;
      where_at(at.n, ch, at.row, at.col) = pos;
      I[at.n][ch][at.row][at.col] = (win.h0 + pos / k) * w + (win.w0 + pos % k);
    }
  }
  for (std::uint32_t i = 0; i < d.n * d.h * d.w * groups; ++i) {
    const mp::Place at = mp::place_of(i, groups, d.h, d.w);
    const auto ih = static_cast<std::int32_t>(at.row), iw = static_cast<std::int32_t>(at.col);
    const mp::Range r = mp::windows_containing(ih, iw, d);
    for (std::int64_t ch = at.group * per; ch < (at.group + 1) * per; ++ch) {
      double sum = 0;
      for (std::int32_t oh = r.ohs; oh < r.ohe; ++oh)
        for (std::int32_t ow = r.ows; ow < r.owe; ++ow)
          if (where_at(at.n, ch, oh, ow) == mp::position(ih, iw, oh * s - p, ow * s - p, k))
            sum += DY[at.n][ch][oh][ow];
      DX[at.n][ch][ih][iw] = sum;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the max-pool kernels' index arithmetic reproduces ATen's pooling on the CPU",
          "[resnet][max_pool]") {
  // The GPU kernels' places, windows, positions and window ranges (max_pool_index.h) driving a
  // scalar pooling: ATen's maxima, winners (ties to the first, NaN wins) and gradients.
  struct Case {
    std::vector<std::int64_t> shape;
    int k, s, p;
    std::uint32_t groups;
  };
  const std::vector<Case> cases = {
      {{2, 16, 112 / 4, 112 / 4}, 3, 2, 1, 2},
      {{3, 16, 9, 11}, 3, 2, 1, 2},
      {{2, 8, 7, 7}, 3, 2, 1, 1},
      {{2, 32, 10, 10}, 2, 2, 0, 4},
      {{2, 24, 13, 9}, 3, 1, 1, 3},
      {{1, 16, 12, 12}, 5, 2, 2, 2},
      {{1, 8, 1, 1}, 3, 2, 1, 1},
      {{2, 8, 2, 5}, 3, 2, 1, 8},
  };
  torch::manual_seed(21);
  for (const auto& c : cases) {
    for (int values = 0; values < 3; ++values) {
      INFO(torch::IntArrayRef(c.shape)
           << " kernel " << c.k << " stride " << c.s << " padding " << c.p << " values " << values);
      torch::Tensor x = values == 0   ? torch::randn(c.shape, torch::kDouble)
                        : values == 1 ? torch::randint(0, 3, c.shape, torch::kDouble)  // ties
                                      : torch::randn(c.shape, torch::kDouble).relu();
      if (values == 0 && x.numel() > 20) x.view(-1)[17] = std::nan("");
      auto xr = x.clone().requires_grad_(true);
      auto [y_ref, idx_ref] = torch::max_pool2d_with_indices(xr, c.k, c.s, c.p);
      const auto dy = torch::randn(y_ref.sizes(), torch::kDouble);
      y_ref.backward(dy);
      const Scalar ours = scalar_pool(x, dy, c.k, c.s, c.p, c.groups);
      CHECK(torch::allclose(ours.y, y_ref.detach(), 0, 0, /*equal_nan=*/true));
      CHECK(torch::equal(ours.indices, idx_ref));
      CHECK(torch::allclose(ours.dx, xr.grad(), 1e-12, 1e-12));
    }
  }
}
