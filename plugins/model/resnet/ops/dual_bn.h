// The resnet option `fused_downsample` (with conv_bn_stats): a downsample bottleneck block's
// bn3, its shortcut's batch-norm, the add and the ReLU as one autograd function over our
// dual_bn_kernels.h, both batch-norms' statistics from their convolutions' epilogues. What it
// replaces: the shortcut's batch-norm alone (cuDNN's, reading the shortcut convolution's output
// twice and writing its own), then bn3's fused add reading that output; in the backward, bn3's
// backward writing the shortcut's gradient and cuDNN's batch-norm backward reading it twice.
#pragma once

#include <torch/nn/modules/batchnorm.h>

#include <cstdint>

namespace orch::resnet {

/// relu(bn(x) + bn_s(s)) in training, x and s of one shape, their per-channel sums and sums of
/// squares given (fp32, C each): the same outputs, gradients, running statistics and
/// num_batches_tracked as relu(bn(x) + bn_s(s)) with both modules' forwards (up to the
/// shortcut's batch-norm output not being rounded to the dtype before the add). Returns an
/// undefined tensor, having changed nothing, where our kernels do not take the inputs (not both
/// training with running statistics, not fp16/bf16 channels-last CUDA of one shape, the sums do
/// not fit, a build or GPU without the kernels).
torch::Tensor dual_bn_relu_from_sums(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x,
                                     const torch::Tensor& sum, const torch::Tensor& sqsum,
                                     torch::nn::BatchNorm2dImpl& bn_s, const torch::Tensor& s,
                                     const torch::Tensor& sum_s, const torch::Tensor& sqsum_s);

/// Calls of dual_bn_relu_from_sums that ran our kernels, in this copy of the library.
std::int64_t dual_bn_calls();

}  // namespace orch::resnet
