// The last batch-norm of a ResNet downsample block and its shortcut's batch-norm, with the add
// and the ReLU, in one pass each way: y = relu(bn(x) + bn_s(s)), where x is conv3's output and
// s the shortcut convolution's, both with their statistics from their convolutions' epilogues
// (conv_bn_from_stats.h). The separate path runs the shortcut's batch-norm on its own
// (statistics, then apply writing its output), and bn3's fused add then reads that output
// again; its backward writes the shortcut's gradient and the shortcut's batch-norm reads it
// twice. Here the forward reads x and s once and writes y (and ReLU's mask), and the backward
// reduces dy', x and s in one pass and writes dx and ds in the next: six passes over a block
// output's size fewer per downsample block. Torch-free like fused_bn_kernels.cu; no allocation,
// no host synchronisation, so a launch is legal inside CUDA graph capture.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "fused_bn_kernels.h"

namespace orch::resnet::kernels {

/// One batch-norm's vectors (fp32, C values each).
struct BnVectors {
  const float* weight = nullptr;
  const float* bias = nullptr;
  float* running_mean = nullptr;  ///< updated by the forward (momentum, unbiased variance)
  float* running_var = nullptr;
  const float* sum = nullptr;    ///< forward: the input's per-channel sum (a conv epilogue's)
  const float* sqsum = nullptr;  ///< and sum of squares
  float* save_mean = nullptr;    ///< forward: written; backward: read
  float* save_invstd = nullptr;  ///< 1/sqrt(var + eps)
  float* grad_weight = nullptr;  ///< backward: written
  float* grad_bias = nullptr;
};

/// Forward: both batch-norms' statistics from their sums (as forward_from_sums), then
/// y = relu(x * scale + shift + s * scale_s + shift_s) in x's dtype, and ReLU's 1-bit mask where
/// `mask` is not null (mask_supported only). x, s and y have the same [rows x channels] shape.
/// The workspace needs 4 * C floats (workspace_floats is enough).
cudaError_t dual_forward_from_sums(Dtype dtype, const Tiling& t, const void* x, const void* s,
                                   void* y, std::uint8_t* mask, const BnVectors& bn,
                                   const BnVectors& bn_s, float* workspace, std::int64_t rows,
                                   std::int64_t channels, float momentum, float eps,
                                   cudaStream_t stream);

/// Backward: dy' = dy where y > 0 (from `mask`, else from the saved output `y`); both
/// batch-norms' weight and bias gradients (grad_bias is sum(dy') for both) and input gradients
/// dx and ds, as backward() computes each alone. The workspace: workspace_floats(t, channels).
cudaError_t dual_backward(Dtype dtype, const Tiling& t, const void* dy, const void* y,
                          const std::uint8_t* mask, const void* x, const void* s,
                          const BnVectors& bn, const BnVectors& bn_s, void* dx, void* ds,
                          float* workspace, std::int64_t rows, std::int64_t channels,
                          cudaStream_t stream);

}  // namespace orch::resnet::kernels
