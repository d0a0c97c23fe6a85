// Fused channels-last batch-norm (+ residual add) + ReLU for fp16/bf16 training: the CUDA
// kernels behind orch::resnet::fused_bn_relu (fused_bn.h), torch-free like the nvjpeg crop
// kernel, so nvcc never sees LibTorch's headers. The caller owns every buffer: the workspace
// comes from PyTorch's caching allocator, so a launch is legal inside CUDA graph capture (no
// allocation, no host synchronisation here).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace orch::resnet::kernels {

enum class Dtype { kHalf, kBFloat16 };

/// How the [rows x channels] NHWC tensor (rows = N*H*W, channels contiguous) is cut up.
struct Tiling {
  int vec = 1;            ///< channels per thread per load: 8 (16-byte loads) or 1
  int threads_c = 32;     ///< threads along channels in a block (power of two)
  int threads_r = 8;      ///< threads along rows in a block (threads_c * threads_r == 256)
  int grid_c = 1;         ///< blocks along channels
  int reduce_grid_r = 1;  ///< blocks along rows for the reductions (= partial rows in workspace)
  int apply_grid_r = 1;   ///< blocks along rows for the element-wise passes
};

/// The tiling for a tensor; `vec8_ok` when channels % 8 == 0 and every pointer is 16-byte aligned.
Tiling make_tiling(std::int64_t rows, std::int64_t channels, int sm_count, bool vec8_ok);

/// fp32 words of workspace a forward or backward call needs for this tiling.
std::int64_t workspace_floats(const Tiling& t, std::int64_t channels);

/// Whether a forward with this tiling can write ReLU's 1-bit mask (the 16-byte path, C % 8 == 0).
bool mask_supported(const Tiling& t, std::int64_t channels);

/// Bytes of ReLU's mask for a [rows x channels] tensor: bit r*C + c in byte (r*C + c) / 8.
std::int64_t mask_bytes(std::int64_t rows, std::int64_t channels);

/// Training forward: batch statistics (Welford, fp32; merged in fp64), running-stat update
/// (momentum, unbiased variance), y = relu(x * scale + shift [+ residual]) in x's dtype.
/// `residual` may be null. save_mean / save_invstd receive the batch mean and 1/sqrt(var+eps).
/// `mask`, where not null (mask_supported only, else cudaErrorInvalidValue), receives y > 0 of
/// each stored output, one bit per element (mask_bytes), for the backward to read instead of y.
cudaError_t forward_training(Dtype dtype, const Tiling& t, const void* x, const void* residual,
                             void* y, std::uint8_t* mask, const float* weight, const float* bias,
                             float* running_mean, float* running_var, float* save_mean,
                             float* save_invstd, float* workspace, std::int64_t rows,
                             std::int64_t channels, float momentum, float eps, cudaStream_t stream);

/// Training forward from statistics a convolution's epilogue computed (conv_bn_from_stats.h):
/// `sum` and `sqsum` are x's per-channel sum and sum of squares (fp32, C each, over all rows).
/// Same outputs and running-stat update as forward_training, without its pass over x for the
/// statistics. The workspace needs 2 * C floats (workspace_floats is enough).
cudaError_t forward_from_sums(Dtype dtype, const Tiling& t, const void* x, const void* residual,
                              void* y, std::uint8_t* mask, const float* weight, const float* bias,
                              float* running_mean, float* running_var, const float* sum,
                              const float* sqsum, float* save_mean, float* save_invstd,
                              float* workspace, std::int64_t rows, std::int64_t channels,
                              float momentum, float eps, cudaStream_t stream);

/// Backward: dy' = dy * (y > 0); grad_weight = sum(dy' * xhat), grad_bias = sum(dy');
/// dx = weight * invstd * (dy' - mean(dy') - xhat * mean(dy' * xhat)); d_residual = dy' when
/// `d_residual` is not null. y > 0 comes from the forward's `mask` where not null (then `y` is
/// not read and may be null; C % 8 == 0), else from the saved output `y`.
cudaError_t backward(Dtype dtype, const Tiling& t, const void* dy, const void* y,
                     const std::uint8_t* mask, const void* x, const float* weight,
                     const float* save_mean, const float* save_invstd, void* dx, void* d_residual,
                     float* grad_weight, float* grad_bias, float* workspace, std::int64_t rows,
                     std::int64_t channels, cudaStream_t stream);

/// forward_training's statistics alone (the resnet stem's fused batch-norm + ReLU + max pooling,
/// stem_pool_kernels.h, applies them itself): save_mean, save_invstd and the running-stat update
/// as forward_training, and per channel scale = w*invstd at workspace[stats_coef_offset + c]
/// and shift = b - mean*scale at workspace[stats_coef_offset + C + c].
cudaError_t batch_stats(Dtype dtype, const Tiling& t, const void* x, const float* weight,
                        const float* bias, float* running_mean, float* running_var,
                        float* save_mean, float* save_invstd, float* workspace, std::int64_t rows,
                        std::int64_t channels, float momentum, float eps, cudaStream_t stream);

/// Where batch_stats leaves scale and shift in its workspace.
std::int64_t stats_coef_offset(const Tiling& t, std::int64_t channels);

/// The backward's per-channel end, from sums another pass made: `partial` holds `parts` blocks
/// of [3][C] floats, sum(dy') at [p][0][c] and sum(dy' * (x - mean)) at [p][1][c], over a
/// batch-norm of `rows` values per channel. Writes grad_weight, grad_bias and coef (3 * C
/// floats: dx = coef[c] * dy' + coef[C + c] * x + coef[2C + c]), as backward does.
cudaError_t backward_coefficients(const float* partial, int parts, std::int64_t channels,
                                  std::int64_t rows, const float* weight, const float* save_mean,
                                  const float* save_invstd, float* grad_weight, float* grad_bias,
                                  float* coef, cudaStream_t stream);

/// cudaFuncGetAttributes of one of these kernels on the current device: fails with
/// cudaErrorNoKernelImageForDevice where the build has no image or PTX for it (for
/// orch::KernelImageCache, <orch/kernel_image.h>).
cudaError_t kernel_attributes(cudaFuncAttributes* attributes);

}  // namespace orch::resnet::kernels
