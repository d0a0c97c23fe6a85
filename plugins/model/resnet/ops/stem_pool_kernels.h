// The resnet stem's batch-norm + ReLU + max pooling in fewer passes (`fused_stem`), torch-free
// like the other kernels here. Why: the stem's output is the largest activation of the network
// (64 channels at 112 x 112), and unfused it is written by the batch-norm, read by the pooling,
// and in the backward written again by the pooling's backward and read twice by the
// batch-norm's. Here the forward pools straight from the convolution's output x, computing
// relu(x * scale + shift) per window element in registers (the statistics come first, from
// fused_bn_kernels' batch_stats), and writes only the pooled output and a one-byte winner per
// value. The backward reduces over the pooled grid (the gradient reaches only winners) and then
// writes dx in one gathering pass. The forward's values are the unfused path's bit for bit
// (the same rounding of each element before the max, the same tie and NaN rules as
// max_pool_kernels.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "max_pool_kernels.h"

namespace orch::resnet::stem_pool_kernels {

using Shape = max_pool_kernels::Shape;

enum class Dtype { kHalf, kBFloat16 };

/// The winner byte: its position in the window in the low 7 bits, and bit 7 set where the
/// gradient passes ReLU (the pooled value is not <= 0, NaN included, as threshold_backward).
constexpr std::uint8_t kPasses = 0x80;
constexpr std::uint8_t kPositionMask = 0x7f;

/// Whether these kernels take the shape: max_pool_kernels::supported for the dtype, and a
/// window of at most 11 x 11 (its position fits in 7 bits).
bool supported(const Shape& s, Dtype dtype);

/// Blocks along the pooled rows of backward_partial (its partial sums: parts * 3 * c floats).
int partial_parts(const Shape& s, int sm_count);

/// y[n, oh, ow, c] = max over the window of relu(x * coef[c] + coef[C + c]) rounded to the
/// dtype; where[...] = the winner byte. All pointers 16-byte aligned.
cudaError_t forward(Dtype dtype, const Shape& s, const void* x, const float* coef, void* y,
                    std::uint8_t* where, cudaStream_t stream);

/// Per channel over the pooled grid, where the gradient passes: sum(dy) and
/// sum(dy * (x[winner] - save_mean)), `parts` blocks of [3][c] floats into `partial` (the layout
/// fused_bn_kernels' backward_coefficients reads).
cudaError_t backward_partial(Dtype dtype, const Shape& s, const void* dy, const std::uint8_t* where,
                             const void* x, const float* save_mean, float* partial, int parts,
                             cudaStream_t stream);

/// dx = coef[c] * g + coef[C + c] * x + coef[2C + c], where g at an input pixel is the fp32 sum
/// of dy over the windows it won with the gradient passing. Writes every element of dx.
cudaError_t backward_apply(Dtype dtype, const Shape& s, const void* dy, const std::uint8_t* where,
                           const void* x, const float* coef, void* dx, cudaStream_t stream);

}  // namespace orch::resnet::stem_pool_kernels
