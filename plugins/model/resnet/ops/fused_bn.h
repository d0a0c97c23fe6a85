// Fused batch-norm + ReLU and batch-norm + residual add + ReLU for the resnet model's
// `fused_bn: true`. Training-mode fp16/bf16 channels-last CUDA inputs run fused,
// through a custom autograd function: by default (`fused_bn_impl: orch`) the kernels in
// fused_bn_kernels.cu, or (`fused_bn_impl: cudnn`) cuDNN's NHWC batch-norm with fused ReLU and
// add (fused_bn_cudnn.h), which falls back to our kernels where cuDNN does not take the input.
// Everything else (CPU, fp32, NCHW, eval mode, no CUDA compiler at build time) runs the unfused
// ops: the module's own forward, then add and ReLU, so the result means the same either way.
#pragma once

#include <torch/nn/modules/batchnorm.h>

#include <cstdint>
#include <string>

#include "residual_grad.h"

namespace orch::resnet {

/// While one lives, our kernels' forwards on this thread save ReLU's 1-bit mask for the
/// backward (`enabled`, the default without a scope) or the output itself (the resnet parameter
/// `relu_mask: false`, to measure what the mask gains). Either way the backward means the same:
/// the mask is y > 0 of the stored output. Nests; restores the previous choice.
class ReluMaskScope {
 public:
  explicit ReluMaskScope(bool enabled);
  ~ReluMaskScope();
  ReluMaskScope(const ReluMaskScope&) = delete;
  ReluMaskScope& operator=(const ReluMaskScope&) = delete;

 private:
  bool previous_;
};

/// Whether our kernels' forwards on this thread save ReLU's mask (the innermost ReluMaskScope's
/// choice; true without one).
bool relu_mask_enabled();

/// Which fused implementation fused_bn_relu runs (the resnet parameter `fused_bn_impl`).
enum class FusedBnImpl {
  kOrch,   ///< our kernels (fused_bn_kernels.cu)
  kCudnn,  ///< cuDNN's batch-norm with fused activation / add; our kernels where it refuses
};

/// "orch" or "cudnn"; throws std::invalid_argument naming the allowed values otherwise.
FusedBnImpl fused_bn_impl_from_string(const std::string& name);
const char* to_string(FusedBnImpl impl);

/// relu(bn(x) [+ residual]); `residual` may be an undefined tensor. Uses bn's parameters and
/// running-stat buffers and increments its num_batches_tracked in training, exactly like
/// bn->forward(x). `impl` picks the fused implementation where the inputs run fused. With a
/// `sink` and a residual, a fused backward leaves the residual's gradient in the sink for
/// conv1x1_with_residual_grad instead of returning it (residual_grad.h).
torch::Tensor fused_bn_relu(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x,
                            const torch::Tensor& residual = {},
                            FusedBnImpl impl = FusedBnImpl::kOrch,
                            const ResidualGradSinkPtr& sink = {});

/// fused_bn_relu(bn, x, residual, kOrch, sink) for an x whose per-channel sum and sum of
/// squares are already known (`sum`, `sqsum`: fp32, C values each, on x's device): a
/// convolution's epilogue computed them (conv_bn_from_stats.h), so our kernels apply the batch-norm
/// without their statistics pass. Same outputs, gradients, running statistics and
/// num_batches_tracked as fused_bn_relu. Returns an undefined tensor, having changed nothing,
/// where fused_bn_relu would not run our kernels (not training with running statistics, inputs
/// fused_bn_supported refuses, a build without the kernels) or the sums do not fit x.
torch::Tensor fused_bn_relu_from_sums(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x,
                                      const torch::Tensor& sum, const torch::Tensor& sqsum,
                                      const torch::Tensor& residual = {},
                                      const ResidualGradSinkPtr& sink = {});

/// bn(x) for a batch-norm with no activation after it (the downsample branch of a ResNet block,
/// `downsample_bn_cudnn`): cuDNN's NHWC batch-norm (cudnn_bn_try) for training-mode inputs it
/// takes, bn.forward(x) otherwise (a refusal, CPU, fp32, eval mode, a build without cuDNN).
/// Same parameters, running statistics and num_batches_tracked either way. Why: ATen runs
/// cuDNN's batch-norm for fp16 but its own, slower, kernels for bf16.
torch::Tensor batch_norm_cudnn(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x);

/// The fused training function itself, on raw tensors (what the tests compare against
/// at::batch_norm + add + relu). Requires fused_bn_supported(...); updates running stats.
torch::Tensor fused_bn_relu_training(const torch::Tensor& x, const torch::Tensor& residual,
                                     const torch::Tensor& weight, const torch::Tensor& bias,
                                     const torch::Tensor& running_mean,
                                     const torch::Tensor& running_var, double momentum, double eps,
                                     const ResidualGradSinkPtr& sink = {});

/// Whether the fused kernels take these inputs (CUDA build, fp16/bf16 4-d channels-last CUDA
/// tensor with more than one value per channel, fp32 affine parameters and running stats,
/// residual of the same shape, dtype and device or undefined).
bool fused_bn_supported(const torch::Tensor& x, const torch::Tensor& residual,
                        const torch::Tensor& weight, const torch::Tensor& bias,
                        const torch::Tensor& running_mean, const torch::Tensor& running_var);

/// Whether bn is in training mode and its forward would update running statistics with a
/// momentum: what the fused paths implement (anything else runs the module's own forward).
bool bn_trains_running_stats(const torch::nn::BatchNorm2dImpl& bn);

/// Whether this build carries the CUDA kernels (false where nvcc was missing at build time).
bool fused_bn_compiled();

/// Calls of fused_bn_relu that took each path, in this copy of the library (the plugin and a
/// test binary each have their own). fused == orch + cudnn.
struct FusedBnCounters {
  std::int64_t fused = 0;           ///< ran fused, either implementation
  std::int64_t unfused = 0;         ///< ran the unfused ops
  std::int64_t orch = 0;            ///< ran fused on our kernels
  std::int64_t cudnn = 0;           ///< ran fused on cuDNN's batch-norm
  std::int64_t cudnn_fallback = 0;  ///< of `orch`: asked for cudnn, which did not take the input
  std::int64_t plain_cudnn = 0;     ///< batch_norm_cudnn calls that ran cuDNN's batch-norm
  std::int64_t plain_module = 0;    ///< batch_norm_cudnn calls that ran the module's forward
  std::int64_t from_sums = 0;       ///< of `orch`: fused_bn_relu_from_sums calls
  std::int64_t relu_mask = 0;       ///< of `orch`: forwards that saved ReLU's 1-bit mask
};
FusedBnCounters fused_bn_counters();

}  // namespace orch::resnet
