// Times, at each ResNet50 shape where a convolution's data gradient feeds a batch-norm + ReLU's
// backward (conv_{i+1}'s data gradient -> bn_i's backward: every block's bn1 and bn2, and every
// block's bn3 but the network's last, whose gradient also receives the next block's shortcut
// gradient), the separate path against the fused one, and prints one markdown table: per shape the
// milliseconds of each, the change, and the shape's share of a step (times how often ResNet50
// runs it), then the totals per step.
//   separate: the data gradient through ATen (cuDNN; for a block's bn3 the next block's shortcut
//          gradient added the way the model adds it: onto it in place with one GEMM after an
//          identity block, an add after a downsample block), then our batch-norm backward
//          (kernels::backward) reading ReLU's 1-bit mask that kernels::forward_training wrote
//          in the set-up.
//   fused: DgradReluDbnGraph (data gradient [+ shortcut gradient] -> ReLU backward -> the
//          batch-norm's weight gradient, one cuDNN graph) + the dx pass (bn_dx_apply). The
//          ReLU's input is recomputed from x ([+ the forward's residual]); where cuDNN refuses
//          that, the variant that reads the forward's output y instead is tried, and the
//          table says which ran or why neither did (--relu-input y: that variant only).
// Each path: a warm-up, then --iters runs each between two CUDA events, the median kept. Each
// fused row also prints how far its dx, dy' (the residual's gradient), dscale and dbias are
// from the separate path's (the largest difference relative to the separate path's largest
// magnitude, and how many elements differ by more than 1%: the ReLU's zero boundary, see below), so
// a fast wrong answer shows.
//   usage: orch_bench_dgrad_shapes [--batch N] [--dtype fp16|bf16] [--iters N] [--warmup N]
//                                  [--relu-input recompute|y]
// Why a program of its own: the issue uses the graph only on the shapes where it wins; this
// decides which.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dgrad_relu_dbn_graph.h"
#include "fused_bn_kernels.h"

namespace {

namespace kernels = orch::resnet::kernels;

/// Where the batch-norm's gradient also receives a shortcut gradient, and how the separate path
/// adds it to the data gradient.
enum class Shortcut {
  kNone,        ///< bn1 or bn2: the data gradient alone
  kIdentity,    ///< a bn3 before an identity block: addmm_ onto the shortcut's gradient
  kDownsample,  ///< a stage's last bn3: the next block's downsample gradient, added
};

struct Shape {
  std::int64_t c, hw;         ///< the batch-norm's channels and side (the data gradient's sizes)
  std::int64_t k, r, stride;  ///< the next convolution: output channels, kernel side, stride
  Shortcut shortcut;
  int count;  ///< how many times a ResNet50 step runs this shape
  std::string where;
};

/// ResNet50 v1.5 at 224x224 (the stride on the 3x3): per stage (planes, blocks, stride), bn1
/// <- conv2 (the first block's at the stage's input size, its conv2 strided), bn2 <- conv3,
/// bn3 <- the next block's conv1 (+ its shortcut), the last stage's last bn3 left out (its
/// gradient comes from the pooling, not a convolution).
std::vector<Shape> resnet50_shapes() {
  std::vector<Shape> out;
  struct Stage {
    std::int64_t planes, blocks, stride, in_hw;
    const char* name;
  };
  const Stage stages[] = {{64, 3, 1, 56, "layer1"},
                          {128, 4, 2, 56, "layer2"},
                          {256, 6, 2, 28, "layer3"},
                          {512, 3, 2, 14, "layer4"}};
  for (int i = 0; i < 4; ++i) {
    const Stage& s = stages[i];
    const std::int64_t p = s.planes, hw = s.in_hw / s.stride;
    const int b = static_cast<int>(s.blocks);
    const std::string n = s.name;
    if (s.stride != 1) {
      out.push_back({p, s.in_hw, p, 3, s.stride, Shortcut::kNone, 1,
                     n + " block 1 bn1 <- conv2 3x3/" + std::to_string(s.stride)});
      out.push_back({p, hw, p, 3, 1, Shortcut::kNone, b - 1, n + " bn1 <- conv2 3x3"});
    } else {
      out.push_back({p, hw, p, 3, 1, Shortcut::kNone, b, n + " bn1 <- conv2 3x3"});
    }
    out.push_back({p, hw, 4 * p, 1, 1, Shortcut::kNone, b, n + " bn2 <- conv3 1x1"});
    out.push_back(
        {4 * p, hw, p, 1, 1, Shortcut::kIdentity, b - 1, n + " bn3 <- next conv1 1x1 + shortcut"});
    if (i < 3)
      out.push_back({4 * p, hw, stages[i + 1].planes, 1, 1, Shortcut::kDownsample, 1,
                     n + " last bn3 <- " + stages[i + 1].name + " conv1 1x1 + downsample"});
  }
  return out;
}

void check(cudaError_t e, const char* what) {
  TORCH_CHECK(e == cudaSuccess, what, ": ", cudaGetErrorString(e));
}

/// The median of `iters` runs of fn, each between two events on the current stream, after
/// `warmup` runs (allocations in the caching allocator, cuDNN's algorithm search).
double median_ms(const std::function<void()>& fn, int warmup, int iters) {
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<cudaEvent_t> ev(2 * static_cast<std::size_t>(iters));
  for (auto& e : ev) check(cudaEventCreate(&e), "cudaEventCreate");
  for (int i = 0; i < iters; ++i) {
    check(cudaEventRecord(ev[2 * i], stream), "cudaEventRecord");
    fn();
    check(cudaEventRecord(ev[2 * i + 1], stream), "cudaEventRecord");
  }
  check(cudaEventSynchronize(ev.back()), "cudaEventSynchronize");
  std::vector<float> ms(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i)
    check(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]), "cudaEventElapsedTime");
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// A refusal's text as one markdown table cell: its first 300 characters (cuDNN's reasons run
/// to kilobytes, one warning per engine it tried; DgradReluDbnGraph::make returns them whole).
std::string cell(std::string s) {
  if (s.size() > 300) s = s.substr(0, 300) + " ...";
  for (char& ch : s)
    if (ch == '|' || ch == '\n' || ch == '\r') ch = ch == '|' ? '/' : ' ';
  return s;
}

bool aligned16(const torch::Tensor& t) {
  return !t.defined() || reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0;
}

kernels::Tiling tiling_for(std::int64_t rows, std::int64_t c,
                           std::initializer_list<torch::Tensor> ts) {
  bool vec8 = true;
  for (const auto& t : ts) vec8 = vec8 && aligned16(t);
  return kernels::make_tiling(rows, c, at::cuda::getCurrentDeviceProperties()->multiProcessorCount,
                              vec8);
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 768;
  int iters = 20, warmup = 3;
  auto dtype = torch::kHalf;
  bool relu_from_y = false;
  const char* usage =
      "usage: %s [--batch N] [--dtype fp16|bf16] [--iters N] [--warmup N] "
      "[--relu-input recompute|y]\n";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--batch")
      batch = std::stoll(v);
    else if (k == "--iters")
      iters = std::max(1, std::stoi(v));
    else if (k == "--warmup")
      warmup = std::max(1, std::stoi(v));
    else if (k == "--dtype" && (v == "fp16" || v == "bf16"))
      dtype = v == "bf16" ? torch::kBFloat16 : torch::kHalf;
    else if (k == "--relu-input" && (v == "recompute" || v == "y"))
      relu_from_y = v == "y";
    else {
      std::fprintf(stderr, usage, argv[0]);
      return 2;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, usage, argv[0]);
    return 2;
  }
  if (!torch::cuda::is_available()) {
    std::printf("no CUDA device: nothing measured\n");
    return 0;
  }
  if (!orch::resnet::dgrad_relu_dbn_compiled())
    std::printf("note: this build has no fused graph; every shape will say why\n");
  // As the fastest training configurations run: cuDNN picks its convolution algorithms by
  // timing them (cudnn_benchmark: on).
  at::globalContext().setBenchmarkCuDNN(true);
  const auto kdtype = dtype == torch::kHalf ? kernels::Dtype::kHalf : kernels::Dtype::kBFloat16;
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto act = opts.dtype(dtype);
  const auto f32 = opts.dtype(torch::kFloat);
  const auto cl = torch::MemoryFormat::ChannelsLast;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  torch::manual_seed(1);

  std::printf("%s, batch %lld, median of %d runs after %d warm-up\n\n",
              dtype == torch::kHalf ? "fp16" : "bf16", static_cast<long long>(batch), iters,
              warmup);
  std::printf(
      "| shape: bn (N, C, H, W) <- conv (K, RxS/stride) | shortcut | count | separate ms | fused "
      "ms | change %% | x count: ms saved | fused vs separate: max diff / max | plan |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  double total_separate = 0, total_fused = 0, total_best = 0;
  int taken = 0, wins = 0;
  for (const Shape& s : resnet50_shapes()) {
    const std::int64_t pad = s.r / 2, out_hw = (s.hw + 2 * pad - s.r) / s.stride + 1;
    const std::int64_t C = s.c, rows = batch * s.hw * s.hw;
    const bool add = s.shortcut != Shortcut::kNone;
    const std::vector<std::int64_t> xs{batch, C, s.hw, s.hw};
    // The forward: y = relu(bn(x) [+ residual]) by our kernels, writing the mask.
    const auto x = torch::randn(xs, act).contiguous(cl);
    const auto residual = add ? torch::randn(xs, act).contiguous(cl) : torch::Tensor();
    const auto y = at::empty(xs, act.memory_format(cl));
    const auto weight = torch::rand({C}, f32) + 0.5, bias = torch::randn({C}, f32) * 0.1;
    auto running_mean = torch::zeros({C}, f32), running_var = torch::ones({C}, f32);
    const auto save_mean = at::empty({C}, f32), save_invstd = at::empty({C}, f32);
    const auto t = tiling_for(rows, C, {x, residual, y});
    const auto workspace = at::empty({kernels::workspace_floats(t, C)}, f32);
    const bool masked = kernels::mask_supported(t, C);
    const auto mask = at::empty({kernels::mask_bytes(rows, C)}, opts.dtype(torch::kByte));
    check(kernels::forward_training(kdtype, t, x.data_ptr(), add ? residual.data_ptr() : nullptr,
                                    y.data_ptr(), masked ? mask.data_ptr<std::uint8_t>() : nullptr,
                                    weight.data_ptr<float>(), bias.data_ptr<float>(),
                                    running_mean.data_ptr<float>(), running_var.data_ptr<float>(),
                                    save_mean.data_ptr<float>(), save_invstd.data_ptr<float>(),
                                    workspace.data_ptr<float>(), rows, C, 0.1f, 1e-5f, stream),
          "forward_training");
    // The backward's inputs: the next convolution's output gradient and filter, and the
    // shortcut's gradient. Small values, so the separate path's in-place accumulation stays finite.
    const auto dy =
        (torch::randn({batch, s.k, out_hw, out_hw}, f32) * 1e-2).to(dtype).contiguous(cl);
    const auto w =
        (torch::randn({s.k, C, s.r, s.r}, f32) / std::sqrt(static_cast<double>(C * s.r * s.r)))
            .to(dtype)
            .contiguous(cl);
    const auto shortcut_grad =
        add ? (torch::randn(xs, f32) * 1e-2).to(dtype).contiguous(cl) : torch::Tensor();
    auto waiting = add ? shortcut_grad.clone() : torch::Tensor();  // the separate GEMM adds onto it

    const auto dx = at::empty(xs, act.memory_format(cl));
    const auto dres = add ? at::empty(xs, act.memory_format(cl)) : torch::Tensor();
    const auto grad_weight = at::empty({C}, f32), grad_bias = at::empty({C}, f32);
    const auto bt = tiling_for(rows, C, {dy, x, dx, dres, waiting});
    const auto bwork = at::empty({kernels::workspace_floats(bt, C)}, f32);
    auto bn_backward = [&](const torch::Tensor& g) {
      check(
          kernels::backward(kdtype, bt, g.data_ptr(), masked ? nullptr : y.data_ptr(),
                            masked ? mask.data_ptr<std::uint8_t>() : nullptr, x.data_ptr(),
                            weight.data_ptr<float>(), save_mean.data_ptr<float>(),
                            save_invstd.data_ptr<float>(), dx.data_ptr(),
                            add ? dres.data_ptr() : nullptr, grad_weight.data_ptr<float>(),
                            grad_bias.data_ptr<float>(), bwork.data_ptr<float>(), rows, C, stream),
          "backward");
    };
    auto dgrad = [&] {
      return std::get<0>(at::convolution_backward(dy, y, w, std::nullopt, {s.stride, s.stride},
                                                  {pad, pad}, {1, 1}, false, {0, 0}, 1,
                                                  {true, false, false}));
    };
    auto separate = [&] {
      if (s.shortcut == Shortcut::kIdentity) {
        // The model's conv1x1_backward_with_sink: waiting += dy @ W, one GEMM in place.
        waiting.permute({0, 2, 3, 1})
            .view({-1, C})
            .addmm_(dy.permute({0, 2, 3, 1}).view({-1, s.k}), w.reshape({s.k, C}));
        bn_backward(waiting);
      } else if (s.shortcut == Shortcut::kDownsample) {
        bn_backward(dgrad() + shortcut_grad);
      } else {
        bn_backward(dgrad());
      }
    };
    const double separate_ms = median_ms(separate, warmup, iters);
    // Today's dx for the same inputs, for the comparison column (the in-place GEMM's target
    // reset first).
    if (add) waiting.copy_(shortcut_grad);
    separate();
    const auto separate_dx = dx.to(torch::kFloat);
    const auto separate_dres = add ? dres.to(torch::kFloat) : torch::Tensor();
    const auto separate_dscale = grad_weight.clone(), separate_dbias = grad_bias.clone();

    // The fused graph: the recomputed ReLU input first, the saved output where that is refused.
    orch::resnet::DgradReluDbnArgs args;
    args.dy = dy;
    args.w = w;
    args.stride = s.stride;
    args.padding = pad;
    args.shortcut_grad = shortcut_grad;
    args.x = x;
    args.save_mean = save_mean;
    args.save_invstd = save_invstd;
    args.weight = weight;
    args.bias = bias;
    args.residual = residual;
    std::string why, variant = "recomputed";
    auto read_y = [&] {
      args.residual = torch::Tensor();
      args.y = y;
      variant = "y";
    };
    if (relu_from_y) read_y();
    auto made = orch::resnet::DgradReluDbnGraph::make(args);
    if (auto* refused = std::get_if<std::string>(&made); refused && !relu_from_y) {
      why = "recomputed: " + *refused + "; ";
      read_y();
      made = orch::resnet::DgradReluDbnGraph::make(args);
    }
    if (auto* refused = std::get_if<std::string>(&made); refused && variant == "y")
      why += "y: " + *refused;
    char shape[160];
    std::snprintf(shape, sizeof shape, "%s: %lld, %lld, %lld, %lld <- %lld, %lldx%lld/%lld",
                  s.where.c_str(), static_cast<long long>(batch), static_cast<long long>(C),
                  static_cast<long long>(s.hw), static_cast<long long>(s.hw),
                  static_cast<long long>(s.k), static_cast<long long>(s.r),
                  static_cast<long long>(s.r), static_cast<long long>(s.stride));
    const char* sc = s.shortcut == Shortcut::kNone       ? "-"
                     : s.shortcut == Shortcut::kIdentity ? "identity"
                                                         : "downsample";
    total_separate += separate_ms * s.count;
    if (std::holds_alternative<std::string>(made)) {
      std::printf("| %s | %s | %d | %.3f | refused: %s | | | | |\n", shape, sc, s.count,
                  separate_ms, cell(why).c_str());
      total_fused += separate_ms * s.count;
      total_best += separate_ms * s.count;
      std::fflush(stdout);
      continue;
    }
    ++taken;
    const auto graph = std::get<std::shared_ptr<orch::resnet::DgradReluDbnGraph>>(made);
    const double fused_ms = median_ms([&] { graph->run(args); }, warmup, iters);
    const auto fused = graph->run(args);
    // How far from the separate path's: per tensor the largest difference relative to the separate
    // path's largest magnitude, not counting the few elements beyond 1% of it, which are counted
    // instead. Those are the ReLU's zero boundary: the graph decides y > 0 on its fp32
    // recomputation of the ReLU's input, the separate path on the stored output, which rounds
    // inputs below half the dtype's smallest step to 0; each such element passes (or not) a whole
    // gradient value.
    const auto close = [](const char* what, const torch::Tensor& got, const torch::Tensor& ref) {
      const auto diff = (got.to(torch::kFloat) - ref).abs();
      const double scale = std::max(ref.abs().max().item<double>(), 1e-30);
      const auto beyond = diff > 1e-2 * scale;
      const double rest = diff.masked_fill(beyond, 0).max().item<double>() / scale;
      const auto n = beyond.sum().item<std::int64_t>();
      char buf[96];
      if (n == 0)
        std::snprintf(buf, sizeof buf, "%s %.0e", what, rest);
      else
        std::snprintf(buf, sizeof buf, "%s %.0e (%lld beyond 1%%)", what, rest,
                      static_cast<long long>(n));
      return std::string(buf);
    };
    std::string errs = close("dx", fused.dx, separate_dx) + ", " +
                       close("dscale", fused.grad_weight, separate_dscale) + ", " +
                       close("dbias", fused.grad_bias, separate_dbias);
    if (add) errs += ", " + close("dy'", fused.dy_relu, separate_dres);
    total_fused += fused_ms * s.count;
    total_best += std::min(separate_ms, fused_ms) * s.count;
    if (fused_ms < separate_ms) ++wins;
    std::printf("| %s | %s | %d | %.3f | %.3f | %+.1f | %.2f | %s | %s, ReLU input %s |\n", shape,
                sc, s.count, separate_ms, fused_ms, 100.0 * (fused_ms - separate_ms) / separate_ms,
                (separate_ms - fused_ms) * s.count, errs.c_str(), graph->engine().c_str(),
                variant.c_str());
    std::fflush(stdout);
  }
  std::printf(
      "\nPer %s step (each shape x its count): separate %.2f ms; fused where cuDNN takes the shape "
      "%.2f ms (%+.1f%%); the faster of the two per shape %.2f ms (%+.1f%%). cuDNN took %d "
      "shapes, the fused path won %d.\n",
      dtype == torch::kHalf ? "fp16" : "bf16", total_separate, total_fused,
      100.0 * (total_fused - total_separate) / total_separate, total_best,
      100.0 * (total_best - total_separate) / total_separate, taken, wins);
  return 0;
}
