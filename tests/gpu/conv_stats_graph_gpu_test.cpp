// cuDNN's graph API convolution + GEN_STATS (conv_stats_graph.h) against ATen: for ResNet50's
// convolution shapes in fp16 and bf16, with and without the scale, bias and ReLU prologue, each
// case prints whether cuDNN took it; where it did, the output must equal ATen's convolution
// within the dtype's rounding and the statistics must be the output's per-channel sums. A
// refusal is cuDNN's documented answer (not supported); any other failure of cuDNN throws and
// fails the test. Then the statistics in reused memory, every ResNet50 bottleneck convolution
// the model meets, and misuse refused with an exception.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

#include "conv_stats_graph.h"

using orch::resnet::conv_with_stats;
using orch::resnet::ConvStats;
using orch::resnet::ScaleBiasRelu;

namespace {

struct Shape {
  std::int64_t n, c, h, k, r, stride, pad;
};

// ResNet50 bottleneck convolutions (batch reduced to keep the reference fast): layer1's 1x1
// reduce and 3x3, a 1x1 expand, layer2's strided 3x3, layer3's 1x1.
const Shape kShapes[] = {{16, 64, 56, 64, 1, 1, 0},
                         {16, 64, 56, 64, 3, 1, 1},
                         {16, 64, 56, 256, 1, 1, 0},
                         {16, 128, 56, 128, 3, 2, 1},
                         {16, 512, 28, 256, 1, 1, 0}};

// One case's inputs: x and w channels-last in `dtype` (w scaled so the outputs stay near 1),
// the prologue's per-channel scale and bias when asked, and a label for the log.
struct Problem {
  torch::Tensor x, w;
  std::optional<ScaleBiasRelu> pro;
  std::string label;
};

Problem make_problem(torch::ScalarType dtype, const Shape& sh, bool with_prologue) {
  const auto opts = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
  Problem p;
  p.x = torch::randn({sh.n, sh.c, sh.h, sh.h}, opts).contiguous(at::MemoryFormat::ChannelsLast);
  p.w = (torch::randn({sh.k, sh.c, sh.r, sh.r}, opts) /
         std::sqrt(static_cast<double>(sh.c * sh.r * sh.r)))
            .contiguous(at::MemoryFormat::ChannelsLast);
  if (with_prologue)
    p.pro = ScaleBiasRelu{torch::rand({sh.c}, opts) + 0.5, torch::randn({sh.c}, opts) * 0.1};
  std::ostringstream label;
  label << (dtype == torch::kHalf ? "fp16" : "bf16") << " n" << sh.n << " c" << sh.c << " " << sh.h
        << "x" << sh.h << " k" << sh.k << " " << sh.r << "x" << sh.r << "/" << sh.stride;
  p.label = label.str();
  return p;
}

// The checks a taken case must pass: the output equals ATen's float32 convolution of the same
// rounded inputs (after the prologue) within the dtype's rounding, and the statistics are the
// output's per-channel sum and sum of squares. Returns the errors, for the log.
std::string check_against_aten(const torch::Tensor& x, const torch::Tensor& w, std::int64_t stride,
                               std::int64_t pad, const std::optional<ScaleBiasRelu>& pro,
                               const ConvStats& r) {
  auto in = x.to(torch::kFloat32);
  if (pro)
    in = torch::relu(in * pro->scale.to(torch::kFloat32).view({1, -1, 1, 1}) +
                     pro->bias.to(torch::kFloat32).view({1, -1, 1, 1}));
  const auto ref = torch::conv2d(in, w.to(torch::kFloat32), {}, stride, pad);
  const auto y = r.y.to(torch::kFloat32);
  REQUIRE(y.sizes() == ref.sizes());
  const double tol =
      x.scalar_type() == torch::kHalf ? 1e-2 : 5e-2;  // output rounding + accumulation
  const double err = (y - ref).abs().max().item<double>();
  const double scale = ref.abs().max().item<double>();
  // The statistics are of the output cuDNN wrote (as rounded or before rounding: both within
  // the rounding's share of the sum), relative to |sum| with a floor for channels whose sum is
  // near zero (no ReLU after the convolution: its outputs have either sign).
  const auto sum = y.sum({0, 2, 3}), sqsum = (y * y).sum({0, 2, 3});
  const double floor = 1e-2 * static_cast<double>(y.numel() / y.size(1));
  const double sum_err = ((r.sum - sum).abs() / (sum.abs() + floor)).max().item<double>();
  const double sq_err = ((r.sqsum - sqsum).abs() / sqsum.clamp_min(1e-3)).max().item<double>();
  CHECK(err <= tol * scale);
  CHECK(sum_err < 0.02);
  CHECK(sq_err < 0.02);
  std::ostringstream o;
  o << "max |y - ATen| " << err << " of " << scale << ", sum rel err " << sum_err
    << ", sqsum rel err " << sq_err;
  return o.str();
}

using ConvStatsFn = std::variant<ConvStats, std::string> (*)(const torch::Tensor&,
                                                             const torch::Tensor&, std::int64_t,
                                                             std::int64_t,
                                                             const std::optional<ScaleBiasRelu>&);

// Every shape x dtype x prologue through `fn`: taken or refused, and right where taken.
// Returns how many cuDNN took.
int probe(const char* api, ConvStatsFn fn) {
  torch::manual_seed(7);
  int taken = 0, cases = 0;
  for (const auto dtype : {torch::kHalf, torch::kBFloat16}) {
    for (const Shape& sh : kShapes) {
      for (const bool with_prologue : {false, true}) {
        ++cases;
        const Problem pb = make_problem(dtype, sh, with_prologue);
        const auto &x = pb.x, &w = pb.w;
        const auto& pro = pb.pro;
        std::ostringstream label;
        label << api << " " << pb.label << (with_prologue ? " +scale,bias,relu" : "");
        INFO(label.str());
        const auto got = fn(x, w, sh.stride, sh.pad, pro);
        if (const auto* why = std::get_if<std::string>(&got)) {
          std::cout << label.str() << ": refused (" << *why << ")\n";
          CHECK_THAT(*why, Catch::Contains("does not take it"));
          continue;
        }
        ++taken;
        const ConvStats& r = std::get<ConvStats>(got);
        std::cout << label.str() << ": taken" << (r.engine.empty() ? "" : " by " + r.engine) << "; "
                  << check_against_aten(x, w, sh.stride, sh.pad, pro, r) << "\n";
      }
    }
  }
  std::cout << api << ": cuDNN took " << taken << " of " << cases << " cases\n";
  return taken;
}

}  // namespace

// The graph API's runtime fusion engine documents this pattern (conv_stats_graph.cpp), so it
// is expected to take at least the fp16 cases without a prologue.
TEST_CASE("cuDNN's graph API: conv + GEN_STATS taken or refused, and right where taken",
          "[gpu][conv_stats_graph]") {
  const int taken = probe("conv_with_stats", &conv_with_stats);
  CHECK(taken > 0);
}

// The statistics must not depend on what the memory they land in held before: the caching
// allocator hands a run blocks that earlier tensors used. Each round first allocates and
// frees tensors of the statistics' size filled with 1e4 (the next allocations of that size
// get those blocks back), then runs the convolution and checks its sums against ATen's.
TEST_CASE("conv + GEN_STATS statistics are right in reused memory", "[gpu][conv_stats_graph]") {
  torch::manual_seed(8);
  const Shape sh{16, 64, 56, 256, 1, 1, 0};
  const Problem pb = make_problem(torch::kHalf, sh, false);
  auto made = orch::resnet::ConvStatsGraph::make(pb.x, pb.w, sh.stride, sh.pad, std::nullopt);
  if (auto* why = std::get_if<std::string>(&made)) {
    WARN("cuDNN refused " << pb.label << ": " << *why << " (nothing to check)");
    return;
  }
  const auto& graph = std::get<std::shared_ptr<orch::resnet::ConvStatsGraph>>(made);
  const auto f32 = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    {
      std::vector<torch::Tensor> junk;
      for (int i = 0; i < 8; ++i) {
        junk.push_back(torch::full({2, sh.k}, 1e4, f32));
        junk.push_back(torch::full({sh.k}, 1e4, f32));
      }
    }  // freed: back in the allocator's cache, values intact
    const ConvStats r = graph->run(pb.x, pb.w, std::nullopt);
    std::cout << "reused memory, round " << round << ": "
              << check_against_aten(pb.x, pb.w, sh.stride, sh.pad, std::nullopt, r) << "\n";
  }
}

namespace {

// Every distinct bottleneck convolution of a ResNet50 (torchvision's v1.5: the stride on the
// 3x3) for `batch` images of side `image` (the stem and max-pool take it to image / 4).
std::vector<Shape> resnet50_block_shapes(std::int64_t batch, std::int64_t image) {
  std::vector<Shape> out;
  auto add = [&](Shape s) {
    for (const Shape& o : out)
      if (o.n == s.n && o.c == s.c && o.h == s.h && o.k == s.k && o.r == s.r &&
          o.stride == s.stride)
        return;
    out.push_back(s);
  };
  std::int64_t in = 64, side = image / 4;
  const std::int64_t planes[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t p = planes[stage];
    for (std::int64_t b = 0; b < blocks[stage]; ++b) {
      const std::int64_t stride = (b == 0 && stage > 0) ? 2 : 1;
      add({batch, in, side, p, 1, 1, 0});
      add({batch, p, side, p, 3, stride, 1});
      side = (side + 2 - 3) / stride + 1;
      add({batch, p, side, p * 4, 1, 1, 0});
      in = p * 4;
    }
  }
  return out;
}

}  // namespace

// The model takes every bottleneck convolution it meets: each one, at the sizes the GPU tests'
// ResNet50s see (64x64 images: layer4 at 2x2) and at ImageNet's 224x224, must give ATen's
// output and that output's statistics.
TEST_CASE("conv + GEN_STATS right for every ResNet50 bottleneck convolution",
          "[gpu][conv_stats_graph]") {
  torch::manual_seed(9);
  for (const auto& [batch, image] :
       {std::pair<std::int64_t, std::int64_t>{16, 64}, {32, 64}, {8, 224}}) {
    for (const Shape& sh : resnet50_block_shapes(batch, image)) {
      const Problem pb = make_problem(torch::kHalf, sh, false);
      INFO(pb.label << " (image " << image << ")");
      const auto got = conv_with_stats(pb.x, pb.w, sh.stride, sh.pad, std::nullopt);
      if (const auto* why = std::get_if<std::string>(&got)) {
        std::cout << pb.label << ": refused (" << *why << ")\n";
        continue;
      }
      std::cout << pb.label << " (image " << image << "): "
                << check_against_aten(pb.x, pb.w, sh.stride, sh.pad, std::nullopt,
                                      std::get<ConvStats>(got))
                << "\n";
    }
  }
}

TEST_CASE("conv_with_stats refuses misuse with an exception, not a refusal",
          "[gpu][conv_stats_graph]") {
  const auto opts = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kHalf);
  const auto x = torch::randn({2, 8, 8, 8}, opts);  // contiguous (NCHW), not channels-last
  const auto w = torch::randn({8, 8, 1, 1}, opts).contiguous(at::MemoryFormat::ChannelsLast);
  CHECK_THROWS_WITH(conv_with_stats(x, w, 1, 0), Catch::Contains("channels-last"));
  CHECK_THROWS_WITH(
      conv_with_stats(x.to(torch::kFloat32).contiguous(at::MemoryFormat::ChannelsLast), w, 1, 0),
      Catch::Contains("fp16 or both bf16"));
}
