// Device helpers shared by the fused batch-norm kernels (fused_bn_kernels.cu) and the
// downsample block's two batch-norms in one pass (dual_bn_kernels.cu): the 16-byte loads and
// stores, ReLU and its backward from the 1-bit mask or the saved output, one channel's end of
// the forward statistics, the finalize kernels' lane sum. Each .cu file compiles its own copy.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "float_convert.cuh"

namespace orch::resnet::kernels::device {

constexpr int kThreads = 256;

using cuda::from_float;
using cuda::to_float;

// `vec` elements moved with one load/store (16 bytes for vec = 8).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};

template <typename T, int VEC>
__device__ __forceinline__ void load(const T* p, float (&out)[VEC]) {
  const Pack<T, VEC> pk = *reinterpret_cast<const Pack<T, VEC>*>(p);
#pragma unroll
  for (int i = 0; i < VEC; ++i) out[i] = to_float(pk.v[i]);
}

template <typename T, int VEC>
__device__ __forceinline__ void store(T* p, const float (&in)[VEC]) {
  Pack<T, VEC> pk;
#pragma unroll
  for (int i = 0; i < VEC; ++i) pk.v[i] = from_float<T>(in[i]);
  *reinterpret_cast<Pack<T, VEC>*>(p) = pk;
}

// ReLU's backward mask: the gradient passes where the output is not <= 0 (NaN passes, as in
// threshold_backward).
__device__ __forceinline__ float relu_grad(float y, float dy) { return y <= 0.f ? 0.f : dy; }
// Whether the gradient passes bit `i` of a mask byte.
__device__ __forceinline__ float mask_grad(unsigned bits, int i, float dy) {
  return (bits >> i) & 1u ? dy : 0.f;
}
// ReLU that keeps NaN (as clamp_min does), so fp16 overflow still reaches the loss scaler.
__device__ __forceinline__ float relu(float v) { return v <= 0.f ? 0.f : v; }

// One channel's end of a forward's statistics, from its batch mean and biased variance (and
// the unbiased one for the running estimate): save_mean / save_invstd for the backward, the
// apply pass's scale and shift, and the running-stat update with BatchNorm2d's meaning
// (momentum; unbiased variance). Shared by both ways of getting the statistics.
__device__ __forceinline__ void finish_channel(int c, int C, double mean, double var,
                                               double unbiased_var, const float* weight,
                                               const float* bias, float* running_mean,
                                               float* running_var, float* save_mean,
                                               float* save_invstd, float* coef, float momentum,
                                               float eps) {
  const double invstd = 1.0 / sqrt(var + static_cast<double>(eps));
  save_mean[c] = static_cast<float>(mean);
  save_invstd[c] = static_cast<float>(invstd);
  const double scale = weight[c] * invstd;
  coef[c] = static_cast<float>(scale);
  coef[C + c] = static_cast<float>(bias[c] - mean * scale);
  if (running_mean != nullptr) {
    running_mean[c] = momentum * static_cast<float>(mean) + (1.f - momentum) * running_mean[c];
    running_var[c] =
        momentum * static_cast<float>(unbiased_var) + (1.f - momentum) * running_var[c];
  }
}

// The finalize kernels merge the reduction's partials: reduce_grid_r of them per channel, up
// to a few hundred. A block is kFinC channels (threadIdx.x, so partial reads are coalesced)
// by kFinLanes lanes (threadIdx.y) that each take every kFinLanes-th partial; the lanes are
// then summed in shared memory. (One thread per channel walking every partial, with a
// division per step, took about a quarter of a ResNet50 step's time.)
constexpr int kFinC = 32;
constexpr int kFinLanes = 16;

// Sums v over the block's lanes for this thread's channel; every lane gets the total.
__device__ __forceinline__ double lane_sum(double v, double (&s)[kFinLanes][kFinC]) {
  s[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  for (int k = kFinLanes / 2; k > 0; k >>= 1) {
    if (threadIdx.y < k) s[threadIdx.y][threadIdx.x] += s[threadIdx.y + k][threadIdx.x];
    __syncthreads();
  }
  const double total = s[0][threadIdx.x];
  __syncthreads();  // s is reused by the next call
  return total;
}

// The gradient through ReLU for VEC channels from c0 of row offset `off`: from the mask's bits
// when there is one, else from the saved output.
template <typename T, int VEC, bool MASK>
__device__ __forceinline__ void relu_backward(const T* __restrict__ y,
                                              const std::uint8_t* __restrict__ mask,
                                              std::int64_t off, float (&g)[VEC]) {
  if constexpr (MASK) {
    const unsigned bits = mask[off >> 3];
    const int first = VEC == 8 ? 0 : static_cast<int>(off & 7);
#pragma unroll
    for (int i = 0; i < VEC; ++i) g[i] = mask_grad(bits, first + i, g[i]);
  } else {
    float yv[VEC];
    load<T, VEC>(y + off, yv);
#pragma unroll
    for (int i = 0; i < VEC; ++i) g[i] = relu_grad(yv[i], g[i]);
  }
}

inline int div_up(std::int64_t a, std::int64_t b) { return static_cast<int>((a + b - 1) / b); }

}  // namespace orch::resnet::kernels::device
