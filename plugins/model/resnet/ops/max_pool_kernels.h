// Channels-last max pooling for the resnet stem (`max_pool_impl: orch`), torch-free like the
// fused batch-norm kernels. Why our own: ATen's max_pool_backward_nhwc is among the largest
// kernels of a fused ResNet50 fp16 step (about 5% of its kernel time), and its forward writes an
// int64 index per output value (over 400 MB at batch 256). Here the forward stores the winner's
// position inside its window as one byte, and the backward gathers: each input pixel sums the
// gradients of the (at most ceil(k/s)^2) windows whose winner it is, in the same order and fp32
// accumulation as ATen's backward, so results are bit-identical to at::max_pool2d's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace orch::resnet::max_pool_kernels {

enum class Dtype { kFloat, kHalf, kBFloat16 };

/// An NHWC max pooling: input n x h x w x c, square window `kernel`, `stride`, `padding`
/// (dilation 1, floor mode), output n x out_h x out_w x c.
struct Shape {
  std::int64_t n = 0, h = 0, w = 0, c = 0;
  int kernel = 3, stride = 2, padding = 1;
  std::int64_t out_h() const { return (h + 2 * padding - kernel) / stride + 1; }
  std::int64_t out_w() const { return (w + 2 * padding - kernel) / stride + 1; }
};

/// Whether these kernels take the shape: a window of at most 15 x 15 (its position fits in a
/// byte), padding at most half the window (every window holds an input pixel, as ATen requires),
/// c a multiple of 16 bytes' worth of elements, a non-empty output, and fewer than 2^32 threads
/// a pass (one per pixel and 16-byte group; they index in 32 bits: max_pool_index.h).
bool supported(const Shape& s, Dtype dtype);

/// y[n, oh, ow, c] = max over the window; where[n, oh, ow, c] = the winner's position in the
/// window (kh * kernel + kw). Ties go to the first in row-major window order and a NaN wins
/// (the last NaN), as in ATen. All pointers 16-byte aligned.
cudaError_t forward(Dtype dtype, const Shape& s, const void* x, void* y, std::uint8_t* where,
                    cudaStream_t stream);

/// dx[n, ih, iw, c] = sum of dy over the windows whose winner is (ih, iw), summed in fp32 in
/// (oh, ow) order. Writes every element of dx.
cudaError_t backward(Dtype dtype, const Shape& s, const void* dy, const std::uint8_t* where,
                     void* dx, cudaStream_t stream);

/// cudaFuncGetAttributes of one of these kernels on the current device (see
/// kernels::kernel_attributes in fused_bn_kernels.h).
cudaError_t kernel_attributes(cudaFuncAttributes* attributes);

}  // namespace orch::resnet::max_pool_kernels
