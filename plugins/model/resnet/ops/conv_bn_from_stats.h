// What the resnet option `conv_bn_stats` runs: a convolution whose epilogue also computes the
// per-channel sum and sum of squares of its output (cuDNN's graph API, ConvStatsGraph in
// conv_stats_graph.h), then the fused batch-norm + ReLU (+ add) taking those statistics
// instead of reading the convolution's output once more to compute them
// (fused_bn_relu_from_sums, our kernels): an autograd function over the pair.
//
// Why: batch-norm takes a large share of a fused ResNet50 fp16 step's kernel time, and its
// forward reads every activation twice (statistics, then apply). Timed alone at ResNet50's
// convolution shapes, cuDNN's fp16 conv + GEN_STATS took about what the convolution alone
// takes, so the statistics come nearly free. Not for bf16: there cuDNN's engines for the graph
// were several times slower than ATen's convolution alone for some shapes, so bf16 inputs run
// the usual way, noted once.
//
// The backward is unchanged in meaning: the batch-norm's backward (our kernels) differentiates
// through its statistics as always, and the convolution's gradients are ATen's
// convolution_backward (or, for an identity block's conv1, conv1x1_backward_with_sink).
#pragma once

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>

#include <cstdint>
#include <functional>

#include "fused_bn.h"
#include "residual_grad.h"

namespace orch::resnet {

/// relu(bn(conv(x)) [+ residual]) with conv's statistics computed in its epilogue, where that
/// applies: bn training with running statistics, x an fp16 channels-last 4-d CUDA tensor, conv
/// without bias or groups or dilation, with equal strides and paddings, a shape cuDNN's graph
/// takes (asked once per shape and thread, its answer remembered), a build with cuDNN and our
/// kernels. Elsewhere it returns fused_bn_relu(bn, unfused_conv(), residual, impl, bn_sink),
/// what the caller would have run, and says why once on stderr. `bn_sink`: as fused_bn_relu's
/// (bn3 in an identity block); `conv_sink`: conv1 of an identity block (1x1, stride 1), whose
/// backward adds its data gradient onto the shortcut's waiting in the sink.
torch::Tensor conv_bn_relu_from_stats(torch::nn::Conv2dImpl& conv, torch::nn::BatchNorm2dImpl& bn,
                                      const torch::Tensor& x, const torch::Tensor& residual,
                                      FusedBnImpl impl, const ResidualGradSinkPtr& bn_sink,
                                      const ResidualGradSinkPtr& conv_sink,
                                      const std::function<torch::Tensor()>& unfused_conv);

/// A downsample bottleneck block's end, `fused_downsample`: relu(bn(conv(x)) + bn_s(conv_s(x_s)))
/// with both convolutions' statistics from their epilogues and both batch-norms, the add and
/// the ReLU in one pass each way (dual_bn.h). Where that does not apply (as
/// conv_bn_relu_from_stats, for either convolution, or the kernels refuse), it returns
/// conv_bn_relu_from_stats(conv, bn, x, shortcut(), impl, {}, {}, unfused_conv), what the caller
/// would have run; `shortcut` is the downsample branch the usual way.
torch::Tensor conv_bn_add_shortcut_relu_from_stats(
    torch::nn::Conv2dImpl& conv, torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x,
    torch::nn::Conv2dImpl& conv_s, torch::nn::BatchNorm2dImpl& bn_s, const torch::Tensor& x_s,
    FusedBnImpl impl, const std::function<torch::Tensor()>& unfused_conv,
    const std::function<torch::Tensor()>& shortcut);

/// Calls of conv_bn_relu_from_stats, in this copy of the library.
struct ConvBnFromStatsCounters {
  std::int64_t taken = 0;     ///< statistics from the convolution's epilogue
  std::int64_t fallback = 0;  ///< the convolution, then fused_bn_relu, as without conv_bn_stats
  /// conv_bn_add_shortcut_relu_from_stats calls that ran the two batch-norms in one pass
  std::int64_t dual = 0;
  /// and those that ran the usual way (a refusal, said once on stderr)
  std::int64_t dual_fallback = 0;
};
ConvBnFromStatsCounters conv_bn_from_stats_counters();

}  // namespace orch::resnet
