// The resnet stem's batch-norm + ReLU + max pooling as one operation (the resnet parameter
// `fused_stem`, with fused_bn): training-mode fp16/bf16 channels-last CUDA inputs run
// stem_pool_kernels.h's passes (the forward never writes the full-size activation, the backward
// never writes its gradient) through a custom autograd function; everything else runs
// fused_bn_relu then max_pool, which mean the same. The forward's output and running statistics
// are the unfused path's bit for bit; the gradients differ only in rounding (a pixel that wins
// two windows gets their gradients summed in fp32, not rounded to fp16/bf16 first).
#pragma once

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/pooling.h>

#include <cstdint>

#include "fused_bn.h"
#include "max_pool.h"

namespace orch::resnet {

/// pool(relu(bn(x))) with bn's parameters and running statistics (num_batches_tracked
/// incremented in training, as bn->forward does). `impl` and `pool_impl` are what the unfused
/// path runs where the fused one does not take the input.
torch::Tensor stem_bn_relu_pool(torch::nn::BatchNorm2dImpl& bn, torch::nn::MaxPool2dImpl& pool,
                                const torch::Tensor& x, FusedBnImpl impl, MaxPoolImpl pool_impl);

/// Whether the fused kernels take these inputs: fused_bn_supported's and the pooling's
/// (orch_max_pool_supported, a window of at most 11 x 11), fp16/bf16.
bool stem_pool_supported(const torch::Tensor& x, const torch::nn::BatchNorm2dImpl& bn,
                         const torch::nn::MaxPool2dOptions& pool);

/// The fused training function on raw tensors (what the tests compare with ATen's ops);
/// requires stem_pool_supported's conditions. Updates the running statistics.
torch::Tensor stem_bn_relu_pool_training(const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias,
                                         const torch::Tensor& running_mean,
                                         const torch::Tensor& running_var, double momentum,
                                         double eps, const torch::nn::MaxPool2dOptions& pool);

/// Calls of stem_bn_relu_pool that took each path, in this copy of the library.
struct StemPoolCounters {
  std::int64_t fused = 0;    ///< stem_pool_kernels
  std::int64_t unfused = 0;  ///< fused_bn_relu then max_pool
};
StemPoolCounters stem_pool_counters();

}  // namespace orch::resnet
