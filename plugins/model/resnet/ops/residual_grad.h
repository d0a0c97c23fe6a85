// `fused_residual_grad`: one kernel fewer per identity bottleneck block in the backward pass.
// A block's input x feeds two paths, conv1 and the shortcut into bn3's fused add, so autograd
// sums two gradients for it with a separate add kernel (about 5% of a fused ResNet50 fp16 step's
// kernel time, reading two tensors and writing one). In an identity
// block conv1 is 1x1 with stride 1, so its data gradient is one GEMM, dx[M, Cin] = dy[M, Cout] @
// W[Cout, Cin] over the M = N*H*W pixels of a channels-last tensor; cuBLAS adds it onto the
// shortcut's gradient in place (beta = 1), which saves the add's extra read and write.
//
// How the two backward nodes meet: bn3's fused function (either implementation) hands the
// residual's gradient to a ResidualGradSink instead of returning it, and conv1's function below
// (whose backward autograd always runs after bn3's: conv1's gradient depends on it through
// conv3, bn2, conv2 and bn1) accumulates its data gradient onto it. Each forward makes its own
// sink, held by the two autograd nodes, so interleaved forwards never share one. Where bn3 did
// not run fused (CPU, fp32, ...) the sink stays empty, the residual's gradient flows through
// autograd as usual, and conv1 computes a plain data gradient.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include <cstdint>
#include <utility>

namespace orch::resnet {

/// The shortcut's gradient, handed from bn3's fused backward to conv1's.
struct ResidualGradSink : torch::CustomClassHolder {
  torch::Tensor grad;  ///< set by the fused batch-norm's backward, taken by conv1's
};
using ResidualGradSinkPtr = c10::intrusive_ptr<ResidualGradSink>;

/// The sink a custom function's forward stored as ctx->saved_data["sink"] (a capsule), or null.
ResidualGradSinkPtr residual_grad_sink(torch::autograd::AutogradContext& ctx);

/// conv2d(x, weight) for a 1x1, stride 1, unpadded, bias-free convolution (weight [Cout, Cin,
/// 1, 1]; cast to x's dtype like autocast would); its backward adds the data gradient onto
/// `sink`'s tensor when one is waiting there (one in-place GEMM), and returns that sum as x's
/// gradient. With an empty or null sink it is conv2d with its usual gradients.
torch::Tensor conv1x1_with_residual_grad(const torch::Tensor& x, const torch::Tensor& weight,
                                         const ResidualGradSinkPtr& sink);

/// The backward of y = conv2d(x, w) for a 1x1, stride 1, unpadded, bias-free convolution with w
/// already in x's dtype: the data gradient added onto the shortcut's gradient waiting in `sink`
/// (one in-place GEMM, the sink emptied) when one waits there, a plain data gradient otherwise.
/// Returns {dx, dw}, dw in w's dtype (undefined with `weight_grad` false: the caller computes
/// it elsewhere, wgrad_stream.h). What conv1x1_with_residual_grad's backward runs, and
/// conv_bn_from_stats.h's convolution with statistics in identity blocks; counted below either way.
std::pair<torch::Tensor, torch::Tensor> conv1x1_backward_with_sink(const torch::Tensor& grad_y,
                                                                   const torch::Tensor& x,
                                                                   const torch::Tensor& w,
                                                                   const ResidualGradSinkPtr& sink,
                                                                   bool weight_grad = true);

/// Backward calls of conv1x1_with_residual_grad (and of conv1x1_backward_with_sink), in this
/// copy of the library.
struct ResidualGradCounters {
  std::int64_t accumulated = 0;  ///< the data gradient was added onto a waiting shortcut gradient
  std::int64_t plain = 0;        ///< nothing was waiting: a plain data gradient
};
ResidualGradCounters residual_grad_counters();

}  // namespace orch::resnet
