// bn_dx_apply (bn_dx_apply_kernels.h): dx = k1 * dy + k2 * x + k3 per channel, the same
// element-wise step as fused_bn_kernels.cu's apply_backward without the ReLU (the graph before
// it already masked dy) and without the residual's copy (dy' is the residual's gradient).
// Reads two tensors and writes one: bound by memory bandwidth, so each thread keeps its
// channels' coefficients in registers and moves 16 bytes per tensor per row where it can.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "bn_dx_apply_kernels.h"
#include "float_convert.cuh"

namespace orch::resnet::kernels {
namespace {

using cuda::from_float;
using cuda::to_float;

// `VEC` elements moved with one load or store (16 bytes for VEC = 8); fused_bn_kernels.cu has
// the same helpers in its own unnamed namespace.
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

template <typename T, int VEC>
__global__ void __launch_bounds__(256)
    dx_apply(const T* __restrict__ dy, const T* __restrict__ x, const float* __restrict__ k_dy,
             const float* __restrict__ k_x, const float* __restrict__ k_b, T* __restrict__ dx,
             std::int64_t rows, int C) {
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  if (c0 >= C) return;
  float k1[VEC], k2[VEC], k3[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    k1[i] = k_dy[c0 + i];
    k2[i] = k_x[c0 + i];
    k3[i] = k_b[c0 + i];
  }
  const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * blockDim.y;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += step) {
    const std::int64_t off = r * C + c0;
    float g[VEC], xv[VEC], out[VEC];
    load<T, VEC>(dy + off, g);
    load<T, VEC>(x + off, xv);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = fmaf(k1[i], g[i], fmaf(k2[i], xv[i], k3[i]));
    store<T, VEC>(dx + off, out);
  }
}

template <typename T, int VEC>
cudaError_t launch(const Tiling& t, const void* dy, const void* x, const float* k_dy,
                   const float* k_x, const float* k_b, void* dx, std::int64_t rows, int C,
                   cudaStream_t stream) {
  const dim3 block(t.threads_c, t.threads_r);
  const dim3 grid(t.grid_c, t.apply_grid_r);
  dx_apply<T, VEC><<<grid, block, 0, stream>>>(static_cast<const T*>(dy), static_cast<const T*>(x),
                                               k_dy, k_x, k_b, static_cast<T*>(dx), rows, C);
  return cudaGetLastError();
}

}  // namespace

cudaError_t bn_dx_apply(Dtype dtype, const Tiling& t, const void* dy, const void* x,
                        const float* coef_dy, const float* coef_x, const float* coef_bias, void* dx,
                        std::int64_t rows, std::int64_t channels, cudaStream_t stream) {
  if (t.vec == 8 && channels % 8 != 0) return cudaErrorInvalidValue;
  if (rows == 0 || channels == 0) return cudaSuccess;
  const int C = static_cast<int>(channels);
#define ORCH_DX(T, V) launch<T, V>(t, dy, x, coef_dy, coef_x, coef_bias, dx, rows, C, stream)
  if (dtype == Dtype::kHalf) return t.vec == 8 ? ORCH_DX(__half, 8) : ORCH_DX(__half, 1);
  return t.vec == 8 ? ORCH_DX(__nv_bfloat16, 8) : ORCH_DX(__nv_bfloat16, 1);
#undef ORCH_DX
}

}  // namespace orch::resnet::kernels
