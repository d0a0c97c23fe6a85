// relu(bn(x) + bn_s(s)) forward and backward in one pass each (dual_bn_kernels.h), built from
// fused_bn_kernels.cu's pieces (fused_bn_device.cuh): the same tiling, the same fp64 finalize,
// the same 16-byte loads and ReLU mask.
//   forward   1. dual_sums_finalize: both batch-norms' statistics from their convolutions'
//                sums (blockIdx.y picks the batch-norm), the running statistics, and
//                scale/shift for each, 4 x C coefficients.
//             2. dual_apply_forward: y = relu(x*scale + shift + s*scale_s + shift_s), the mask.
//   backward  1. dual_backward_partial: dy' (mask), and per channel sum(dy'),
//                sum(dy' (x - mean)), sum(dy' (s - mean_s)): the three slots of a partial.
//             2. dual_backward_finalize: both batch-norms' weight and bias gradients and their
//                dx = k1*dy' + k2*x + k3 coefficients, 6 x C.
//             3. dual_apply_backward: dx and ds from dy', x and s.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "dual_bn_kernels.h"
#include "fused_bn_device.cuh"
#include "orch/cuda_launch.h"

namespace orch::resnet::kernels {
namespace {

using namespace device;  // NOLINT(google-build-using-namespace): the shared helpers

__global__ void dual_sums_finalize(BnVectors a, BnVectors b, float* coef, int C, double n,
                                   float momentum, float eps) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const BnVectors& v = blockIdx.y == 0 ? a : b;
  const double mean = v.sum[c] / n;
  const double var = fmax(v.sqsum[c] / n - mean * mean, 0.0);
  finish_channel(c, C, mean, var, var * n / (n - 1), v.weight, v.bias, v.running_mean,
                 v.running_var, v.save_mean, v.save_invstd, coef + 2 * C * blockIdx.y, momentum,
                 eps);
}

template <typename T, int VEC, bool MASK>
__global__ void __launch_bounds__(kThreads)
    dual_apply_forward(const T* __restrict__ x, const T* __restrict__ s, T* __restrict__ y,
                       std::uint8_t* __restrict__ mask, const float* __restrict__ coef,
                       std::int64_t rows, int C) {
  static_assert(!MASK || VEC == 8, "a mask byte is one thread's 8 channels");
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  if (c0 >= C) return;
  float scale[VEC], shift[VEC], scale_s[VEC], shift_s[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    scale[i] = coef[c0 + i];
    shift[i] = coef[C + c0 + i];
    scale_s[i] = coef[2 * C + c0 + i];
    shift_s[i] = coef[3 * C + c0 + i];
  }
  const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * blockDim.y;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += step) {
    const std::int64_t off = r * C + c0;
    float v[VEC], sv[VEC];
    load<T, VEC>(x + off, v);
    load<T, VEC>(s + off, sv);
#pragma unroll
    for (int i = 0; i < VEC; ++i)
      v[i] = relu(fmaf(v[i], scale[i], shift[i]) + fmaf(sv[i], scale_s[i], shift_s[i]));
    Pack<T, VEC> pk;
#pragma unroll
    for (int i = 0; i < VEC; ++i) pk.v[i] = from_float<T>(v[i]);
    *reinterpret_cast<Pack<T, VEC>*>(y + off) = pk;
    if constexpr (MASK) {
      // From the stored value, as apply_forward: exactly threshold_backward's y > 0.
      unsigned bits = 0;
#pragma unroll
      for (int i = 0; i < VEC; ++i) bits |= (to_float(pk.v[i]) <= 0.f ? 0u : 1u) << i;
      mask[off >> 3] = static_cast<std::uint8_t>(bits);
    }
  }
}

template <typename T, int VEC, bool MASK>
__global__ void __launch_bounds__(kThreads)
    dual_backward_partial(const T* __restrict__ dy, const T* __restrict__ y,
                          const std::uint8_t* __restrict__ mask, const T* __restrict__ x,
                          const T* __restrict__ s, const float* __restrict__ save_mean,
                          const float* __restrict__ save_mean_s, std::int64_t rows, int C,
                          float* __restrict__ partial) {
  __shared__ float s_a[kThreads * VEC];
  __shared__ float s_b[kThreads * VEC];
  __shared__ float s_c[kThreads * VEC];
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  const bool active = c0 < C;
  float sa[VEC], sb[VEC], sc[VEC], mean[VEC], mean_s[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    sa[i] = sb[i] = sc[i] = 0.f;
    mean[i] = active ? save_mean[c0 + i] : 0.f;
    mean_s[i] = active ? save_mean_s[c0 + i] : 0.f;
  }
  if (active) {
    const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * blockDim.y;
    for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
         r < rows; r += step) {
      const std::int64_t off = r * C + c0;
      float g[VEC], xv[VEC], sv[VEC];
      load<T, VEC>(dy + off, g);
      relu_backward<T, VEC, MASK>(y, mask, off, g);
      load<T, VEC>(x + off, xv);
      load<T, VEC>(s + off, sv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        sa[i] += g[i];
        sb[i] = fmaf(g[i], xv[i] - mean[i], sb[i]);
        sc[i] = fmaf(g[i], sv[i] - mean_s[i], sc[i]);
      }
    }
  }
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    s_a[tid * VEC + i] = sa[i];
    s_b[tid * VEC + i] = sb[i];
    s_c[tid * VEC + i] = sc[i];
  }
  __syncthreads();
  for (int k = blockDim.y / 2; k > 0; k >>= 1) {
    if (threadIdx.y < k) {
      const int o = tid + k * blockDim.x;
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        s_a[tid * VEC + i] += s_a[o * VEC + i];
        s_b[tid * VEC + i] += s_b[o * VEC + i];
        s_c[tid * VEC + i] += s_c[o * VEC + i];
      }
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && active) {
    float* p = partial + static_cast<std::int64_t>(blockIdx.y) * 3 * C;
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      p[c0 + i] = s_a[tid * VEC + i];
      p[C + c0 + i] = s_b[tid * VEC + i];
      p[2 * C + c0 + i] = s_c[tid * VEC + i];
    }
  }
}

// One batch-norm's gradients from sum(dy') and sum(dy' (x - mean)), as backward_finalize:
// grad_bias, grad_weight and dx = k1*dy' + k2*x + k3 (k1..k3 at coef[c], coef[C+c], coef[2C+c]).
__device__ __forceinline__ void backward_channel(int c, int C, std::int64_t rows, double sum_dy,
                                                 double sum_dy_xmu, const BnVectors& v,
                                                 float* coef) {
  const double invstd = v.save_invstd[c];
  const double mean = v.save_mean[c];
  const double sum_dy_xhat = sum_dy_xmu * invstd;
  v.grad_weight[c] = static_cast<float>(sum_dy_xhat);
  v.grad_bias[c] = static_cast<float>(sum_dy);
  const double k1 = v.weight[c] * invstd;
  const double k2 = -k1 * invstd * (sum_dy_xhat / static_cast<double>(rows));
  const double k3 = -k1 * (sum_dy / static_cast<double>(rows)) - k2 * mean;
  coef[c] = static_cast<float>(k1);
  coef[C + c] = static_cast<float>(k2);
  coef[2 * C + c] = static_cast<float>(k3);
}

__global__ void __launch_bounds__(kFinC* kFinLanes)
    dual_backward_finalize(const float* __restrict__ partial, int parts, int C, std::int64_t rows,
                           BnVectors a, BnVectors b, float* coef) {
  __shared__ double sh[kFinLanes][kFinC];
  const int c = blockIdx.x * kFinC + threadIdx.x;
  const bool active = c < C;
  double sum_dy = 0, sum_x = 0, sum_s = 0;
  if (active) {
    for (int p = threadIdx.y; p < parts; p += kFinLanes) {
      const float* q = partial + static_cast<std::int64_t>(p) * 3 * C;
      sum_dy += q[c];
      sum_x += q[C + c];
      sum_s += q[2 * C + c];
    }
  }
  sum_dy = lane_sum(sum_dy, sh);
  sum_x = lane_sum(sum_x, sh);
  sum_s = lane_sum(sum_s, sh);
  if (!active || threadIdx.y != 0) return;
  backward_channel(c, C, rows, sum_dy, sum_x, a, coef);
  backward_channel(c, C, rows, sum_dy, sum_s, b, coef + 3 * C);
}

template <typename T, int VEC, bool MASK>
__global__ void __launch_bounds__(kThreads)
    dual_apply_backward(const T* __restrict__ dy, const T* __restrict__ y,
                        const std::uint8_t* __restrict__ mask, const T* __restrict__ x,
                        const T* __restrict__ s, const float* __restrict__ coef, T* __restrict__ dx,
                        T* __restrict__ ds, std::int64_t rows, int C) {
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  if (c0 >= C) return;
  float k[6][VEC];
#pragma unroll
  for (int j = 0; j < 6; ++j) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) k[j][i] = coef[j * C + c0 + i];
  }
  const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * blockDim.y;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += step) {
    const std::int64_t off = r * C + c0;
    float g[VEC], xv[VEC], sv[VEC], out[VEC];
    load<T, VEC>(dy + off, g);
    relu_backward<T, VEC, MASK>(y, mask, off, g);
    load<T, VEC>(x + off, xv);
    load<T, VEC>(s + off, sv);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = fmaf(k[0][i], g[i], fmaf(k[1][i], xv[i], k[2][i]));
    store<T, VEC>(dx + off, out);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = fmaf(k[3][i], g[i], fmaf(k[4][i], sv[i], k[5][i]));
    store<T, VEC>(ds + off, out);
  }
}

template <typename T, int VEC>
cudaError_t forward_impl(const Tiling& t, const void* x, const void* s, void* y, std::uint8_t* mask,
                         const BnVectors& bn, const BnVectors& bn_s, float* workspace,
                         std::int64_t rows, int C, float momentum, float eps, cudaStream_t stream) {
  orch::discard_pending_cuda_error();
  dual_sums_finalize<<<dim3(div_up(C, 128), 2), 128, 0, stream>>>(
      bn, bn_s, workspace, C, static_cast<double>(rows), momentum, eps);
  const dim3 block(t.threads_c, t.threads_r);
  const dim3 grid(t.grid_c, t.apply_grid_r);
  const T* xp = static_cast<const T*>(x);
  const T* sp = static_cast<const T*>(s);
  if constexpr (VEC == 8) {
    if (mask != nullptr) {
      dual_apply_forward<T, VEC, true>
          <<<grid, block, 0, stream>>>(xp, sp, static_cast<T*>(y), mask, workspace, rows, C);
      return cudaGetLastError();
    }
  }
  dual_apply_forward<T, VEC, false>
      <<<grid, block, 0, stream>>>(xp, sp, static_cast<T*>(y), nullptr, workspace, rows, C);
  return cudaGetLastError();
}

template <typename T, int VEC, bool MASK>
void backward_passes(const Tiling& t, const T* dy, const T* y, const std::uint8_t* mask, const T* x,
                     const T* s, const BnVectors& bn, const BnVectors& bn_s, T* dx, T* ds,
                     float* workspace, std::int64_t rows, int C, cudaStream_t stream) {
  const dim3 block(t.threads_c, t.threads_r);
  float* partial = workspace;
  float* coef = workspace + static_cast<std::int64_t>(t.reduce_grid_r) * 3 * C;
  dual_backward_partial<T, VEC, MASK><<<dim3(t.grid_c, t.reduce_grid_r), block, 0, stream>>>(
      dy, y, mask, x, s, bn.save_mean, bn_s.save_mean, rows, C, partial);
  dual_backward_finalize<<<div_up(C, kFinC), dim3(kFinC, kFinLanes), 0, stream>>>(
      partial, t.reduce_grid_r, C, rows, bn, bn_s, coef);
  dual_apply_backward<T, VEC, MASK><<<dim3(t.grid_c, t.apply_grid_r), block, 0, stream>>>(
      dy, y, mask, x, s, coef, dx, ds, rows, C);
}

template <typename T, int VEC>
cudaError_t backward_impl(const Tiling& t, const void* dy, const void* y, const std::uint8_t* mask,
                          const void* x, const void* s, const BnVectors& bn, const BnVectors& bn_s,
                          void* dx, void* ds, float* workspace, std::int64_t rows, int C,
                          cudaStream_t stream) {
  orch::discard_pending_cuda_error();
  const auto* dyp = static_cast<const T*>(dy);
  const auto* yp = static_cast<const T*>(y);
  const auto* xp = static_cast<const T*>(x);
  const auto* sp = static_cast<const T*>(s);
  if (mask != nullptr) {
    backward_passes<T, VEC, true>(t, dyp, nullptr, mask, xp, sp, bn, bn_s, static_cast<T*>(dx),
                                  static_cast<T*>(ds), workspace, rows, C, stream);
  } else {
    backward_passes<T, VEC, false>(t, dyp, yp, nullptr, xp, sp, bn, bn_s, static_cast<T*>(dx),
                                   static_cast<T*>(ds), workspace, rows, C, stream);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t dual_forward_from_sums(Dtype dtype, const Tiling& t, const void* x, const void* s,
                                   void* y, std::uint8_t* mask, const BnVectors& bn,
                                   const BnVectors& bn_s, float* workspace, std::int64_t rows,
                                   std::int64_t channels, float momentum, float eps,
                                   cudaStream_t stream) {
  if (mask != nullptr && !mask_supported(t, channels)) return cudaErrorInvalidValue;
  const int C = static_cast<int>(channels);
#define ORCH_DUAL_FWD(T, V) \
  forward_impl<T, V>(t, x, s, y, mask, bn, bn_s, workspace, rows, C, momentum, eps, stream)
  if (dtype == Dtype::kHalf)
    return t.vec == 8 ? ORCH_DUAL_FWD(__half, 8) : ORCH_DUAL_FWD(__half, 1);
  return t.vec == 8 ? ORCH_DUAL_FWD(__nv_bfloat16, 8) : ORCH_DUAL_FWD(__nv_bfloat16, 1);
#undef ORCH_DUAL_FWD
}

cudaError_t dual_backward(Dtype dtype, const Tiling& t, const void* dy, const void* y,
                          const std::uint8_t* mask, const void* x, const void* s,
                          const BnVectors& bn, const BnVectors& bn_s, void* dx, void* ds,
                          float* workspace, std::int64_t rows, std::int64_t channels,
                          cudaStream_t stream) {
  if (mask != nullptr && channels % 8 != 0) return cudaErrorInvalidValue;
  if (mask == nullptr && y == nullptr) return cudaErrorInvalidValue;
  const int C = static_cast<int>(channels);
#define ORCH_DUAL_BWD(T, V) \
  backward_impl<T, V>(t, dy, y, mask, x, s, bn, bn_s, dx, ds, workspace, rows, C, stream)
  if (dtype == Dtype::kHalf)
    return t.vec == 8 ? ORCH_DUAL_BWD(__half, 8) : ORCH_DUAL_BWD(__half, 1);
  return t.vec == 8 ? ORCH_DUAL_BWD(__nv_bfloat16, 8) : ORCH_DUAL_BWD(__nv_bfloat16, 1);
#undef ORCH_DUAL_BWD
}

}  // namespace orch::resnet::kernels
