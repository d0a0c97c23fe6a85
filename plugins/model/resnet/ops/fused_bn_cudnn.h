// The resnet model's `fused_bn_impl: cudnn`: training-mode batch-norm + ReLU and batch-norm +
// residual add + ReLU as cuDNN's fused NHWC operations (cudnnBatchNormalizationForwardTrainingEx
// / cudnnBatchNormalizationBackwardEx, CUDNN_BATCHNORM_SPATIAL_PERSISTENT, bnOps
// CUDNN_BATCHNORM_OPS_BN_ACTIVATION or _BN_ADD_ACTIVATION, ReLU), in a custom autograd function
// beside our own kernels' (fused_bn.h), so the two can be measured against each other.
// Graph-capture safe like ours: every buffer comes from the caching allocator, cuDNN runs on
// the current stream, nothing is read back. This header does not include cuDNN's.
#pragma once

#include <torch/types.h>

#include <string>

#include "residual_grad.h"

namespace orch::resnet {

/// Whether this build calls cuDNN (false where nvcc or cuDNN's header / library was missing).
bool cudnn_fused_bn_compiled();

/// Whether cuDNN's fused batch-norm is tried on these inputs: those of fused_bn_supported (fp16 or
/// bf16 4-d channels-last CUDA tensor, fp32 parameters and running statistics, a residual of the
/// same shape, dtype and layout or none), a cuDNN build, channels a multiple of 4 and fewer than
/// 2^31 elements. cuDNN itself may still refuse (CUDNN_STATUS_NOT_SUPPORTED, e.g. a dtype its
/// fused kernels lack); cudnn_fused_bn_relu_try reports that. `why`, when given, receives the
/// reason it is not tried.
bool cudnn_fused_bn_supported(const torch::Tensor& x, const torch::Tensor& residual,
                              const torch::Tensor& weight, const torch::Tensor& bias,
                              const torch::Tensor& running_mean, const torch::Tensor& running_var,
                              std::string* why = nullptr);

/// relu(batch_norm(x) [+ residual]) in training mode through cuDNN, updating the running
/// statistics (running = (1 - momentum) * running + momentum * batch, unbiased variance, as
/// torch::nn::BatchNorm2d). Returns an undefined tensor, having launched and changed nothing,
/// for inputs cudnn_fused_bn_supported(...) does not take or cuDNN refuses (`refused`, when
/// given, receives the reason: that check's, or cuDNN's status and the call that returned it);
/// throws on any other cuDNN error.
torch::Tensor cudnn_fused_bn_relu_try(const torch::Tensor& x, const torch::Tensor& residual,
                                      const torch::Tensor& weight, const torch::Tensor& bias,
                                      const torch::Tensor& running_mean,
                                      const torch::Tensor& running_var, double momentum, double eps,
                                      std::string* refused = nullptr,
                                      const ResidualGradSinkPtr& sink = {});

/// batch_norm(x) alone (no activation, no residual) in training mode through cuDNN's NHWC
/// batch-norm (CUDNN_BATCHNORM_OPS_BN), updating the running statistics like
/// cudnn_fused_bn_relu_try; the same refusals. What the resnet's downsample branches run with
/// `downsample_bn_cudnn` (ATen itself runs cuDNN's batch-norm for fp16 but its own kernels for
/// bf16).
torch::Tensor cudnn_bn_try(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias, const torch::Tensor& running_mean,
                           const torch::Tensor& running_var, double momentum, double eps,
                           std::string* refused = nullptr);

/// cudnn_fused_bn_relu_try that throws (naming the reason) where cuDNN does not take the inputs:
/// what the tests compare against at::batch_norm + add + relu.
torch::Tensor cudnn_fused_bn_relu_training(const torch::Tensor& x, const torch::Tensor& residual,
                                           const torch::Tensor& weight, const torch::Tensor& bias,
                                           const torch::Tensor& running_mean,
                                           const torch::Tensor& running_var, double momentum,
                                           double eps);

}  // namespace orch::resnet
