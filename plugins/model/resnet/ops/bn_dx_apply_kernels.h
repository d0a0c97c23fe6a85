// Batch-norm's input gradient from per-channel coefficients, one element-wise pass: what
// follows the fused data-gradient + ReLU-backward + batch-norm weight-gradient graph
// (dgrad_relu_dbn_graph.h), which leaves dy' and the coefficients. Torch-free like
// fused_bn_kernels.cu, so nvcc never sees LibTorch's headers; no allocation, no host
// synchronisation, so a launch is legal inside CUDA graph capture.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "fused_bn_kernels.h"

namespace orch::resnet::kernels {

/// dx = coef_dy[c] * dy + coef_x[c] * x + coef_bias[c] over the [rows x channels] NHWC tensors
/// (rows = N*H*W, channels contiguous), computed in fp32 and stored in `dtype`. `t` comes from
/// make_tiling: its 16-byte path (t.vec == 8) needs channels % 8 == 0 and every tensor pointer
/// 16-byte aligned; t.threads_c, t.threads_r, t.grid_c and t.apply_grid_r shape the launch.
cudaError_t bn_dx_apply(Dtype dtype, const Tiling& t, const void* dy, const void* x,
                        const float* coef_dy, const float* coef_x, const float* coef_bias, void* dx,
                        std::int64_t rows, std::int64_t channels, cudaStream_t stream);

}  // namespace orch::resnet::kernels
