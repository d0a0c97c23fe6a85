// Times our fused batch-norm + ReLU (+ residual add) at each batch-norm shape of ResNet50 (the
// ones fused_bn runs: every block's bn1, bn2, bn3 and the stem's), forward and backward, with
// ReLU's 1-bit mask and with the saved output (ReluMaskScope), in turns, and prints one
// markdown table: per shape the milliseconds of a forward + backward, the bytes moved per
// second, and the shape's share of a step (times how often the network runs it).
//   usage: orch_bench_bn_shapes [--batch N] [--dtype fp16|bf16] [--iters N]
// Why a program of its own: the end-to-end img/s says whether a change pays; this says where.
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "fused_bn.h"

namespace {

struct Shape {
  std::int64_t channels, hw;
  bool residual;
  int count;  ///< how many batch-norms of ResNet50 have this shape
  std::string where;
};

/// ResNet50 v1.5 at 224x224: the stem, then per stage (planes, blocks, stride) the first block
/// (bn1 at the input size, bn2 and bn3 after the stride) and the others.
std::vector<Shape> resnet50_shapes() {
  std::vector<Shape> out{{64, 112, false, 1, "stem bn1"}};
  struct Stage {
    std::int64_t planes, blocks, stride, in_hw;
    const char* name;
  };
  for (const Stage& s : {Stage{64, 3, 1, 56, "layer1"}, Stage{128, 4, 2, 56, "layer2"},
                         Stage{256, 6, 2, 28, "layer3"}, Stage{512, 3, 2, 14, "layer4"}}) {
    const std::int64_t hw = s.in_hw / s.stride;
    const std::string n = s.name;
    if (s.stride != 1) {
      out.push_back({s.planes, s.in_hw, false, 1, n + " block 1 bn1"});
      out.push_back({s.planes, hw, false, static_cast<int>(2 * s.blocks - 1), n + " bn1, bn2"});
    } else {
      out.push_back({s.planes, hw, false, static_cast<int>(2 * s.blocks), n + " bn1, bn2"});
    }
    out.push_back({s.planes * 4, hw, true, static_cast<int>(s.blocks), n + " bn3 + add"});
  }
  return out;
}

double time_ms(const std::function<void()>& fn, int iters) {
  auto stream = c10::cuda::getCurrentCUDAStream();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  fn();  // warm-up: allocations in the caching allocator
  cudaEventRecord(a, stream.stream());
  for (int i = 0; i < iters; ++i) fn();
  cudaEventRecord(b, stream.stream());
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / iters;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 768;
  int iters = 20;
  auto dtype = torch::kHalf;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--batch")
      batch = std::stoll(v);
    else if (k == "--iters")
      iters = std::stoi(v);
    else if (k == "--dtype")
      dtype = v == "bf16" ? torch::kBFloat16 : torch::kHalf;
    else {
      std::fprintf(stderr, "usage: %s [--batch N] [--dtype fp16|bf16] [--iters N]\n", argv[0]);
      return 2;
    }
  }
  if (!torch::cuda::is_available()) {
    std::printf("no CUDA device: nothing measured\n");
    return 0;
  }
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto cl = torch::MemoryFormat::ChannelsLast;
  std::printf(
      "| shape (N, C, H, W) | add | count | fwd+bwd ms, y saved | fwd+bwd ms, mask | "
      "mask / y | GB/s, mask | x count: ms saved |\n|---|---|---|---|---|---|---|---|\n");
  double total_y = 0, total_mask = 0;
  for (const auto& s : resnet50_shapes()) {
    const std::vector<std::int64_t> shape{batch, s.channels, s.hw, s.hw};
    const auto x = torch::randn(shape, opts).to(dtype).contiguous(cl).requires_grad_(true);
    const auto res = s.residual
                         ? torch::randn(shape, opts).to(dtype).contiguous(cl).requires_grad_(true)
                         : torch::Tensor();
    const auto dy = torch::randn(shape, opts).to(dtype).contiguous(cl);
    auto w = (torch::rand({s.channels}, opts) + 0.5).requires_grad_(true);
    auto b = (torch::randn({s.channels}, opts) * 0.1).requires_grad_(true);
    auto rm = torch::zeros({s.channels}, opts), rv = torch::ones({s.channels}, opts);
    auto step = [&](bool mask) {
      return [&, mask] {
        torch::Tensor y;
        {
          const orch::resnet::ReluMaskScope scope(mask);
          y = orch::resnet::fused_bn_relu_training(x, res, w, b, rm, rv, 0.1, 1e-5);
        }
        std::vector<torch::Tensor> inputs{x, w, b};
        if (res.defined()) inputs.push_back(res);
        torch::autograd::grad({y}, inputs, {dy});
      };
    };
    // In turns, twice each, the better of each kept: a clock or neighbour change hits both.
    double with_y = 1e30, with_mask = 1e30;
    for (int round = 0; round < 2; ++round) {
      with_y = std::min(with_y, time_ms(step(false), iters));
      with_mask = std::min(with_mask, time_ms(step(true), iters));
    }
    // Bytes a masked forward + backward moves at least: forward reads x (twice: statistics and
    // apply) [+ residual] and writes y and the mask; backward reads dy, mask, x twice and writes
    // dx [+ d_residual].
    const double e = static_cast<double>(x.numel()) * x.element_size();
    const double bytes = (2 * e + (s.residual ? e : 0) + e + e / 16) +
                         (2 * (e + e / 16 + e) + e + (s.residual ? e : 0));
    std::printf("| %lld, %lld, %lld, %lld | %s | %d | %.3f | %.3f | %.3f | %.0f | %.2f |\n",
                static_cast<long long>(batch), static_cast<long long>(s.channels),
                static_cast<long long>(s.hw), static_cast<long long>(s.hw),
                s.residual ? "yes" : "no", s.count, with_y, with_mask, with_mask / with_y,
                bytes / (with_mask * 1e-3) / 1e9, (with_y - with_mask) * s.count);
    total_y += with_y * s.count;
    total_mask += with_mask * s.count;
  }
  std::printf(
      "\nAll %s batch-norms of one step (shape x count): %.2f ms with y saved, %.2f ms "
      "with the mask (%.1f%% less)\n",
      dtype == torch::kHalf ? "fp16" : "bf16", total_y, total_mask,
      100.0 * (total_y - total_mask) / total_y);
  return 0;
}
