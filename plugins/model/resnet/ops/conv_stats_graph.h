// A convolution that also emits the per-channel sum and sum of squares of its output, what the
// next batch-norm needs for its batch statistics, through cuDNN's graph API (a convolution node
// with a GEN_STATS epilogue; cuDNN 9 documents the pattern for its runtime fusion engine).
// `conv_bn_stats` runs it (conv_bn_from_stats.h), so the batch-norm after it skips its own
// statistics pass over the activation. Optionally the convolution's input first goes through a
// scale, bias and ReLU (the previous batch-norm's apply step folded into the convolution), which
// cuDNN documents for the same fusion; the model does not use that prologue.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace orch::resnet {

struct ConvStats {
  torch::Tensor y;      ///< the convolution's output, N x K x P x Q, channels-last, x's dtype
  torch::Tensor sum;    ///< per output channel, float32, K
  torch::Tensor sqsum;  ///< per output channel, float32, K
  std::string engine;   ///< conv_with_stats: which cuDNN engine configuration ran it
};

/// Input prologue: y = conv(relu(x * scale + bias)) with per-channel scale and bias (x's dtype,
/// C values each), as a batch-norm's apply step folded into the next convolution.
struct ScaleBiasRelu {
  torch::Tensor scale, bias;
};

/// The convolution's sizes: input N x C x H x W, filter K x C x R x S, output N x K x P x Q.
struct ConvShape {
  std::int64_t n, c, h, w, k, r, s, p, q;
};

/// The argument checks conv_with_stats and ConvStatsGraph make, throwing
/// std::invalid_argument that starts with `who`; returns the sizes.
ConvShape check_conv_stats_args(const char* who, const torch::Tensor& x, const torch::Tensor& w,
                                std::int64_t stride, std::int64_t padding,
                                const std::optional<ScaleBiasRelu>& prologue);

/// conv2d(x, w, stride, padding) (no bias, no dilation, no groups) with its output's
/// per-channel statistics: ConvStatsGraph::make and run for one call. x: N x C x H x W
/// channels-last fp16 or bf16 on CUDA; w: K x C x R x S channels-last, same dtype. Returns the
/// result, or cuDNN's reason when it does not take these inputs (not supported, or built
/// without cuDNN's headers); throws on misuse (wrong devices, dtypes or layouts) and on cuDNN
/// errors other than a refusal. ConvStats::engine names the configuration that ran.
std::variant<ConvStats, std::string> conv_with_stats(
    const torch::Tensor& x, const torch::Tensor& w, std::int64_t stride, std::int64_t padding,
    const std::optional<ScaleBiasRelu>& prologue = {});

/// The cuDNN graph for one problem (sizes, dtype, with or without the prologue): a convolution
/// node with a GEN_STATS node on its output and, with the prologue, MUL, ADD and RELU_FWD nodes
/// on its input, and an execution plan of the first engine configuration that finalizes one
/// (cuDNN's heuristics first, then every engine it has for the graph). Built once and run many
/// times, as a model needs it: building asks cuDNN's heuristics and finalizes a plan, which
/// takes milliseconds to seconds (a runtime-fusion engine compiles kernels then). Run it on the
/// thread that built it: the plan holds that thread's cuDNN handle.
class ConvStatsGraph {
 public:
  /// Builds the graph and its plan for these inputs' sizes and dtype. Returns cuDNN's refusal
  /// as conv_with_stats does; throws on misuse and other cuDNN errors.
  static std::variant<std::shared_ptr<ConvStatsGraph>, std::string> make(
      const torch::Tensor& x, const torch::Tensor& w, std::int64_t stride, std::int64_t padding,
      const std::optional<ScaleBiasRelu>& prologue);
  ~ConvStatsGraph();
  ConvStatsGraph(const ConvStatsGraph&) = delete;
  ConvStatsGraph& operator=(const ConvStatsGraph&) = delete;

  /// Runs the plan on the current stream into new output tensors. x, w and prologue must have
  /// the sizes, dtype and layout the graph was built for (checked; std::invalid_argument).
  ConvStats run(const torch::Tensor& x, const torch::Tensor& w,
                const std::optional<ScaleBiasRelu>& prologue) const;

 private:
  struct Impl;
  explicit ConvStatsGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace orch::resnet
