// Fused channels-last batch-norm (+ residual) + ReLU, forward and backward, fp16 / bf16.
//
// Layout. A channels-last NCHW tensor is a row-major [rows x C] matrix, rows = N*H*W, with C
// contiguous. Every kernel uses one 2-D block shape: threads_c threads along channels, each
// owning `vec` adjacent channels (8 -> one 16-byte load per row when C % 8 == 0 and the
// pointers are aligned, else 1), and threads_r threads along rows, 256 threads in all. A warp
// therefore reads whole contiguous row segments, and a thread's per-channel state (statistics
// or the per-channel affine coefficients) lives in registers for every row it visits.
//
// Memory passes (the unfused LibTorch path makes ~2x as many, plus the add and the ReLUs):
//   forward   1. stats_partial: each block walks a strided subset of rows, keeps a Welford
//                (mean, M2, count) per channel per thread in fp32, merges the block's threads
//                with Chan's formula in shared memory and writes one partial per block row
//                to the workspace ([reduce_grid_r][3][C] floats).
//             2. stats_finalize (small: 32 channels x 16 lanes per block): merges the
//                partials in fp64,
//                writes save_mean / save_invstd, updates running_mean / running_var like
//                torch::nn::BatchNorm2d (momentum; unbiased variance for running_var, biased
//                for normalisation) and precomputes scale = w*invstd, shift = b - mean*scale.
//             3. apply_forward: y = relu(x*scale + shift [+ residual]) in fp32, stored in the
//                input dtype, and (16-byte path) ReLU's mask, one bit per element.
//   forward_from_sums (conv_bn_from_stats.h: the convolution before produced the per-channel
//             sum and sum of squares in its epilogue):
//             1. sums_finalize (one thread per channel, fp64: mean = sum/n,
//                var = sqsum/n - mean^2, then as stats_finalize), 2. apply_forward;
//                no pass over x for the statistics.
//   backward  1. backward_partial: dy' = dy where y > 0 (ReLU's mask: the forward's bits when it
//                wrote them, else read from the saved output; NaN outputs pass the gradient
//                like threshold_backward) and per
//                channel sum(dy'), sum(dy' * (x - mean)) in fp32, partials to the workspace.
//             2. backward_finalize (small, like stats_finalize): grad_bias = sum(dy'), grad_weight
//             = sum(dy' xhat),
//                and dx = k1*dy' + k2*x + k3 coefficients per channel.
//             3. apply_backward: dx (input dtype) and, for the add variant, d_residual = dy'.
// The mask. The backward needs only y > 0 of the output, one bit of its 16: reading the bits
// instead of y takes one of the three tensors the backward's two passes read down to 1/16 of
// its bytes (the passes are bound by memory bandwidth, so bytes are time). The bit is taken
// from the value as stored in the dtype, so it means exactly what y > 0 on the saved output
// meant (a positive fp32 value that rounds to 0 stays masked). Bit e = r*C + c of the [rows x
// C] tensor lives in byte e / 8, bit e % 8: with C % 8 == 0 (required for the mask) a thread of
// the 16-byte path writes its 8 channels' bits as one whole byte, and the scalar backward can
// still read them.
// No kernel allocates or synchronises; the caller hands in the workspace (from the caching
// allocator) and the stream, so the whole thing can be captured in a CUDA graph.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "fused_bn_device.cuh"
#include "fused_bn_kernels.h"
#include "orch/cuda_launch.h"

namespace orch::resnet::kernels {
namespace {

using namespace device;  // NOLINT(google-build-using-namespace): the shared helpers

template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads)
    stats_partial(const T* __restrict__ x, std::int64_t rows, int C, float* __restrict__ partial) {
  __shared__ float s_mean[kThreads * VEC];
  __shared__ float s_m2[kThreads * VEC];
  __shared__ float s_n[kThreads];
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  const bool active = c0 < C;
  float mean[VEC], m2[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) mean[i] = m2[i] = 0.f;
  float n = 0.f;
  if (active) {
    const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * blockDim.y;
    for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
         r < rows; r += step) {
      float v[VEC];
      load<T, VEC>(x + r * C + c0, v);
      n += 1.f;
      const float inv = 1.f / n;
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float d = v[i] - mean[i];
        mean[i] += d * inv;
        m2[i] += d * (v[i] - mean[i]);
      }
    }
  }
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    s_mean[tid * VEC + i] = mean[i];
    s_m2[tid * VEC + i] = m2[i];
  }
  s_n[tid] = n;
  __syncthreads();
  // Chan's parallel merge along threadIdx.y (blockDim.y is a power of two).
  for (int s = blockDim.y / 2; s > 0; s >>= 1) {
    if (threadIdx.y < s) {
      const int o = tid + s * blockDim.x;
      const float na = s_n[tid], nb = s_n[o];
      if (nb > 0.f) {
        const float nn = na + nb;
        const float fb = nb / nn;
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          const float ma = s_mean[tid * VEC + i];
          const float d = s_mean[o * VEC + i] - ma;
          s_mean[tid * VEC + i] = ma + d * fb;
          s_m2[tid * VEC + i] += s_m2[o * VEC + i] + d * d * na * fb;
        }
        s_n[tid] = nn;
      }
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && active) {
    float* p = partial + static_cast<std::int64_t>(blockIdx.y) * 3 * C;
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      p[c0 + i] = s_mean[tid * VEC + i];
      p[C + c0 + i] = s_m2[tid * VEC + i];
      p[2 * C + c0 + i] = s_n[tid];
    }
  }
}

__global__ void __launch_bounds__(kFinC* kFinLanes)
    stats_finalize(const float* __restrict__ partial, int parts, int C,
                   const float* __restrict__ weight, const float* __restrict__ bias,
                   float* running_mean, float* running_var, float* save_mean, float* save_invstd,
                   float* coef, float momentum, float eps) {
  __shared__ double s[kFinLanes][kFinC];
  const int c = blockIdx.x * kFinC + threadIdx.x;
  const bool active = c < C;
  // Two passes over the partials (count, mean, M2), in fp64 and without a division inside the
  // loops: n = sum n_p, mean = sum n_p mean_p / n, M2 = sum M2_p + n_p (mean_p - mean)^2.
  double n = 0, sum = 0;
  if (active) {
    for (int p = threadIdx.y; p < parts; p += kFinLanes) {
      const float* q = partial + static_cast<std::int64_t>(p) * 3 * C;
      const double nb = q[2 * C + c];
      n += nb;
      sum += nb * q[c];
    }
  }
  n = lane_sum(n, s);
  sum = lane_sum(sum, s);
  const double mean = n > 0 ? sum / n : 0.0;
  double m2 = 0;
  if (active) {
    for (int p = threadIdx.y; p < parts; p += kFinLanes) {
      const float* q = partial + static_cast<std::int64_t>(p) * 3 * C;
      const double nb = q[2 * C + c];
      const double d = q[c] - mean;
      m2 += q[C + c] + nb * d * d;  // an empty partial has n = M2 = 0
    }
  }
  m2 = lane_sum(m2, s);
  if (!active || threadIdx.y != 0) return;
  finish_channel(c, C, mean, m2 / n, m2 / (n - 1), weight, bias, running_mean, running_var,
                 save_mean, save_invstd, coef, momentum, eps);
}

// The statistics from a convolution epilogue's fp32 per-channel sums: n values per channel.
// var = E[x^2] - E[x]^2 in fp64 from fp32 sums: exact enough when |mean| is not orders of
// magnitude above the standard deviation (true of convolution outputs feeding a batch-norm;
// what MLPerf's fused ResNet does); clamped at 0 against rounding.
__global__ void sums_finalize(const float* __restrict__ sum, const float* __restrict__ sqsum, int C,
                              double n, const float* __restrict__ weight,
                              const float* __restrict__ bias, float* running_mean,
                              float* running_var, float* save_mean, float* save_invstd, float* coef,
                              float momentum, float eps) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const double mean = sum[c] / n;
  const double var = fmax(sqsum[c] / n - mean * mean, 0.0);
  finish_channel(c, C, mean, var, var * n / (n - 1), weight, bias, running_mean, running_var,
                 save_mean, save_invstd, coef, momentum, eps);
}

template <typename T, int VEC, bool RES, bool MASK>
__global__ void __launch_bounds__(kThreads)
    apply_forward(const T* __restrict__ x, const T* __restrict__ res, T* __restrict__ y,
                  std::uint8_t* __restrict__ mask, const float* __restrict__ coef,
                  std::int64_t rows, int C) {
  static_assert(!MASK || VEC == 8, "a mask byte is one thread's 8 channels");
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  if (c0 >= C) return;
  float scale[VEC], shift[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    scale[i] = coef[c0 + i];
    shift[i] = coef[C + c0 + i];
  }
  const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * blockDim.y;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += step) {
    const std::int64_t off = r * C + c0;
    float v[VEC];
    load<T, VEC>(x + off, v);
    if constexpr (RES) {
      float rv[VEC];
      load<T, VEC>(res + off, rv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[i] = relu(fmaf(v[i], scale[i], shift[i]) + rv[i]);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[i] = relu(fmaf(v[i], scale[i], shift[i]));
    }
    Pack<T, VEC> pk;
#pragma unroll
    for (int i = 0; i < VEC; ++i) pk.v[i] = from_float<T>(v[i]);
    *reinterpret_cast<Pack<T, VEC>*>(y + off) = pk;
    if constexpr (MASK) {
      // From the stored value: the bit is exactly threshold_backward's y > 0 (NaN passes).
      unsigned bits = 0;
#pragma unroll
      for (int i = 0; i < VEC; ++i) bits |= (to_float(pk.v[i]) <= 0.f ? 0u : 1u) << i;
      mask[off >> 3] = static_cast<std::uint8_t>(bits);
    }
  }
}

template <typename T, int VEC, bool MASK>
__global__ void __launch_bounds__(kThreads)
    backward_partial(const T* __restrict__ dy, const T* __restrict__ y,
                     const std::uint8_t* __restrict__ mask, const T* __restrict__ x,
                     const float* __restrict__ save_mean, std::int64_t rows, int C,
                     float* __restrict__ partial) {
  __shared__ float s_a[kThreads * VEC];
  __shared__ float s_b[kThreads * VEC];
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  const bool active = c0 < C;
  float sa[VEC], sb[VEC], mean[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    sa[i] = sb[i] = 0.f;
    mean[i] = active ? save_mean[c0 + i] : 0.f;
  }
  if (active) {
    const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * blockDim.y;
    for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
         r < rows; r += step) {
      const std::int64_t off = r * C + c0;
      float g[VEC], xv[VEC];
      load<T, VEC>(dy + off, g);
      relu_backward<T, VEC, MASK>(y, mask, off, g);
      load<T, VEC>(x + off, xv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float gi = g[i];
        sa[i] += gi;
        sb[i] = fmaf(gi, xv[i] - mean[i], sb[i]);
      }
    }
  }
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    s_a[tid * VEC + i] = sa[i];
    s_b[tid * VEC + i] = sb[i];
  }
  __syncthreads();
  for (int s = blockDim.y / 2; s > 0; s >>= 1) {
    if (threadIdx.y < s) {
      const int o = tid + s * blockDim.x;
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        s_a[tid * VEC + i] += s_a[o * VEC + i];
        s_b[tid * VEC + i] += s_b[o * VEC + i];
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
    }
  }
}

__global__ void __launch_bounds__(kFinC* kFinLanes)
    backward_finalize(const float* __restrict__ partial, int parts, int C, std::int64_t rows,
                      const float* __restrict__ weight, const float* __restrict__ save_mean,
                      const float* __restrict__ save_invstd, float* grad_weight, float* grad_bias,
                      float* coef) {
  __shared__ double s[kFinLanes][kFinC];
  const int c = blockIdx.x * kFinC + threadIdx.x;
  const bool active = c < C;
  double sum_dy = 0, sum_dy_xmu = 0;
  if (active) {
    for (int p = threadIdx.y; p < parts; p += kFinLanes) {
      const float* q = partial + static_cast<std::int64_t>(p) * 3 * C;
      sum_dy += q[c];
      sum_dy_xmu += q[C + c];
    }
  }
  sum_dy = lane_sum(sum_dy, s);
  sum_dy_xmu = lane_sum(sum_dy_xmu, s);
  if (!active || threadIdx.y != 0) return;
  const double invstd = save_invstd[c];
  const double mean = save_mean[c];
  const double sum_dy_xhat = sum_dy_xmu * invstd;
  grad_weight[c] = static_cast<float>(sum_dy_xhat);
  grad_bias[c] = static_cast<float>(sum_dy);
  // dx = k1 * (dy' - sum_dy/M - xhat * sum_dy_xhat/M) = k1*dy' + k2*x + k3
  const double k1 = weight[c] * invstd;
  const double k2 = -k1 * invstd * (sum_dy_xhat / static_cast<double>(rows));
  const double k3 = -k1 * (sum_dy / static_cast<double>(rows)) - k2 * mean;
  coef[c] = static_cast<float>(k1);
  coef[C + c] = static_cast<float>(k2);
  coef[2 * C + c] = static_cast<float>(k3);
}

template <typename T, int VEC, bool RES, bool MASK>
__global__ void __launch_bounds__(kThreads)
    apply_backward(const T* __restrict__ dy, const T* __restrict__ y,
                   const std::uint8_t* __restrict__ mask, const T* __restrict__ x,
                   const float* __restrict__ coef, T* __restrict__ dx, T* __restrict__ dres,
                   std::int64_t rows, int C) {
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  if (c0 >= C) return;
  float k1[VEC], k2[VEC], k3[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    k1[i] = coef[c0 + i];
    k2[i] = coef[C + c0 + i];
    k3[i] = coef[2 * C + c0 + i];
  }
  const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * blockDim.y;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += step) {
    const std::int64_t off = r * C + c0;
    float g[VEC], xv[VEC], out[VEC];
    load<T, VEC>(dy + off, g);
    relu_backward<T, VEC, MASK>(y, mask, off, g);
    load<T, VEC>(x + off, xv);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = fmaf(k1[i], g[i], fmaf(k2[i], xv[i], k3[i]));
    store<T, VEC>(dx + off, out);
    if constexpr (RES) store<T, VEC>(dres + off, g);
  }
}

// The forward's element-wise pass, with or without the residual, writing the mask when given
// one (the 16-byte path only: forward_training / forward_from_sums check that).
template <typename T, int VEC, bool MASK>
void launch_apply_forward_masked(const Tiling& t, const void* x, const void* residual, void* y,
                                 std::uint8_t* mask, const float* coef, std::int64_t rows, int C,
                                 cudaStream_t stream) {
  const dim3 block(t.threads_c, t.threads_r);
  const dim3 grid(t.grid_c, t.apply_grid_r);
  const T* xp = static_cast<const T*>(x);
  if (residual != nullptr) {
    apply_forward<T, VEC, true, MASK><<<grid, block, 0, stream>>>(
        xp, static_cast<const T*>(residual), static_cast<T*>(y), mask, coef, rows, C);
  } else {
    apply_forward<T, VEC, false, MASK>
        <<<grid, block, 0, stream>>>(xp, nullptr, static_cast<T*>(y), mask, coef, rows, C);
  }
}

template <typename T, int VEC>
void launch_apply_forward(const Tiling& t, const void* x, const void* residual, void* y,
                          std::uint8_t* mask, const float* coef, std::int64_t rows, int C,
                          cudaStream_t stream) {
  if constexpr (VEC == 8) {
    if (mask != nullptr) {
      launch_apply_forward_masked<T, VEC, true>(t, x, residual, y, mask, coef, rows, C, stream);
      return;
    }
  }
  launch_apply_forward_masked<T, VEC, false>(t, x, residual, y, nullptr, coef, rows, C, stream);
}

template <typename T, int VEC>
cudaError_t forward_impl(const Tiling& t, const void* x, const void* residual, void* y,
                         std::uint8_t* mask, const float* weight, const float* bias,
                         float* running_mean, float* running_var, float* save_mean,
                         float* save_invstd, float* workspace, std::int64_t rows, int C,
                         float momentum, float eps, cudaStream_t stream) {
  const dim3 block(t.threads_c, t.threads_r);
  float* partial = workspace;
  float* coef = workspace + static_cast<std::int64_t>(t.reduce_grid_r) * 3 * C;
  orch::discard_pending_cuda_error();
  stats_partial<T, VEC><<<dim3(t.grid_c, t.reduce_grid_r), block, 0, stream>>>(
      static_cast<const T*>(x), rows, C, partial);
  stats_finalize<<<div_up(C, kFinC), dim3(kFinC, kFinLanes), 0, stream>>>(
      partial, t.reduce_grid_r, C, weight, bias, running_mean, running_var, save_mean, save_invstd,
      coef, momentum, eps);
  launch_apply_forward<T, VEC>(t, x, residual, y, mask, coef, rows, C, stream);
  return cudaGetLastError();
}

template <typename T, int VEC>
cudaError_t forward_from_sums_impl(const Tiling& t, const void* x, const void* residual, void* y,
                                   std::uint8_t* mask, const float* weight, const float* bias,
                                   float* running_mean, float* running_var, const float* sum,
                                   const float* sqsum, float* save_mean, float* save_invstd,
                                   float* workspace, std::int64_t rows, int C, float momentum,
                                   float eps, cudaStream_t stream) {
  float* coef = workspace;
  orch::discard_pending_cuda_error();
  sums_finalize<<<div_up(C, 128), 128, 0, stream>>>(sum, sqsum, C, static_cast<double>(rows),
                                                    weight, bias, running_mean, running_var,
                                                    save_mean, save_invstd, coef, momentum, eps);
  launch_apply_forward<T, VEC>(t, x, residual, y, mask, coef, rows, C, stream);
  return cudaGetLastError();
}

// The backward's two passes over rows, ReLU's mask read from `mask` (MASK) or from y.
template <typename T, int VEC, bool MASK>
void launch_backward_passes(const Tiling& t, const T* dy, const T* y, const std::uint8_t* mask,
                            const T* x, const float* weight, const float* save_mean,
                            const float* save_invstd, T* dx, T* dres, float* grad_weight,
                            float* grad_bias, float* workspace, std::int64_t rows, int C,
                            cudaStream_t stream) {
  const dim3 block(t.threads_c, t.threads_r);
  float* partial = workspace;
  float* coef = workspace + static_cast<std::int64_t>(t.reduce_grid_r) * 3 * C;
  backward_partial<T, VEC, MASK><<<dim3(t.grid_c, t.reduce_grid_r), block, 0, stream>>>(
      dy, y, mask, x, save_mean, rows, C, partial);
  backward_finalize<<<div_up(C, kFinC), dim3(kFinC, kFinLanes), 0, stream>>>(
      partial, t.reduce_grid_r, C, rows, weight, save_mean, save_invstd, grad_weight, grad_bias,
      coef);
  const dim3 grid(t.grid_c, t.apply_grid_r);
  if (dres != nullptr) {
    apply_backward<T, VEC, true, MASK>
        <<<grid, block, 0, stream>>>(dy, y, mask, x, coef, dx, dres, rows, C);
  } else {
    apply_backward<T, VEC, false, MASK>
        <<<grid, block, 0, stream>>>(dy, y, mask, x, coef, dx, nullptr, rows, C);
  }
}

template <typename T, int VEC>
cudaError_t backward_impl(const Tiling& t, const void* dy, const void* y, const std::uint8_t* mask,
                          const void* x, const float* weight, const float* save_mean,
                          const float* save_invstd, void* dx, void* d_residual, float* grad_weight,
                          float* grad_bias, float* workspace, std::int64_t rows, int C,
                          cudaStream_t stream) {
  const T* dyp = static_cast<const T*>(dy);
  const T* yp = static_cast<const T*>(y);
  const T* xp = static_cast<const T*>(x);
  T* dxp = static_cast<T*>(dx);
  T* dresp = static_cast<T*>(d_residual);
  orch::discard_pending_cuda_error();
  if (mask != nullptr) {
    launch_backward_passes<T, VEC, true>(t, dyp, nullptr, mask, xp, weight, save_mean, save_invstd,
                                         dxp, dresp, grad_weight, grad_bias, workspace, rows, C,
                                         stream);
  } else {
    launch_backward_passes<T, VEC, false>(t, dyp, yp, nullptr, xp, weight, save_mean, save_invstd,
                                          dxp, dresp, grad_weight, grad_bias, workspace, rows, C,
                                          stream);
  }
  return cudaGetLastError();
}

}  // namespace

Tiling make_tiling(std::int64_t rows, std::int64_t channels, int sm_count, bool vec8_ok) {
  Tiling t;
  t.vec = vec8_ok && channels % 8 == 0 ? 8 : 1;
  const std::int64_t groups = (channels + t.vec - 1) / t.vec;
  t.threads_c = 1;
  while (t.threads_c < groups && t.threads_c < 32) t.threads_c *= 2;
  t.threads_r = kThreads / t.threads_c;
  t.grid_c = div_up(groups, t.threads_c);
  const int sms = std::max(sm_count, 1);
  // Reductions: at least ~8 rows per thread, about 4 blocks per SM in all (the partials stay
  // small and the finalize kernel's loop short).
  const std::int64_t reduce_cap = std::max<std::int64_t>(1, 4LL * sms / t.grid_c);
  t.reduce_grid_r = static_cast<int>(
      std::clamp<std::int64_t>(div_up(rows, static_cast<std::int64_t>(t.threads_r) * 8), 1,
                               std::min<std::int64_t>(reduce_cap, 65535)));
  // Element-wise passes: ~4 rows per thread, up to 16 blocks per SM.
  const std::int64_t apply_cap = std::max<std::int64_t>(1, 16LL * sms / t.grid_c);
  t.apply_grid_r = static_cast<int>(
      std::clamp<std::int64_t>(div_up(rows, static_cast<std::int64_t>(t.threads_r) * 4), 1,
                               std::min<std::int64_t>(apply_cap, 65535)));
  return t;
}

std::int64_t workspace_floats(const Tiling& t, std::int64_t channels) {
  // The partials, then up to two batch-norms' three coefficients (dual_bn_kernels.h).
  return (static_cast<std::int64_t>(t.reduce_grid_r) * 3 + 6) * channels;
}

bool mask_supported(const Tiling& t, std::int64_t channels) {
  return t.vec == 8 && channels % 8 == 0;
}

std::int64_t mask_bytes(std::int64_t rows, std::int64_t channels) {
  return (rows * channels + 7) / 8;
}

cudaError_t forward_training(Dtype dtype, const Tiling& t, const void* x, const void* residual,
                             void* y, std::uint8_t* mask, const float* weight, const float* bias,
                             float* running_mean, float* running_var, float* save_mean,
                             float* save_invstd, float* workspace, std::int64_t rows,
                             std::int64_t channels, float momentum, float eps,
                             cudaStream_t stream) {
  if (mask != nullptr && !mask_supported(t, channels)) return cudaErrorInvalidValue;
  const int C = static_cast<int>(channels);
#define ORCH_FWD(T, V)                                                                            \
  forward_impl<T, V>(t, x, residual, y, mask, weight, bias, running_mean, running_var, save_mean, \
                     save_invstd, workspace, rows, C, momentum, eps, stream)
  if (dtype == Dtype::kHalf) return t.vec == 8 ? ORCH_FWD(__half, 8) : ORCH_FWD(__half, 1);
  return t.vec == 8 ? ORCH_FWD(__nv_bfloat16, 8) : ORCH_FWD(__nv_bfloat16, 1);
#undef ORCH_FWD
}

cudaError_t forward_from_sums(Dtype dtype, const Tiling& t, const void* x, const void* residual,
                              void* y, std::uint8_t* mask, const float* weight, const float* bias,
                              float* running_mean, float* running_var, const float* sum,
                              const float* sqsum, float* save_mean, float* save_invstd,
                              float* workspace, std::int64_t rows, std::int64_t channels,
                              float momentum, float eps, cudaStream_t stream) {
  if (mask != nullptr && !mask_supported(t, channels)) return cudaErrorInvalidValue;
  const int C = static_cast<int>(channels);
#define ORCH_FWD_SUMS(T, V)                                                                      \
  forward_from_sums_impl<T, V>(t, x, residual, y, mask, weight, bias, running_mean, running_var, \
                               sum, sqsum, save_mean, save_invstd, workspace, rows, C, momentum, \
                               eps, stream)
  if (dtype == Dtype::kHalf)
    return t.vec == 8 ? ORCH_FWD_SUMS(__half, 8) : ORCH_FWD_SUMS(__half, 1);
  return t.vec == 8 ? ORCH_FWD_SUMS(__nv_bfloat16, 8) : ORCH_FWD_SUMS(__nv_bfloat16, 1);
#undef ORCH_FWD_SUMS
}

cudaError_t backward(Dtype dtype, const Tiling& t, const void* dy, const void* y,
                     const std::uint8_t* mask, const void* x, const float* weight,
                     const float* save_mean, const float* save_invstd, void* dx, void* d_residual,
                     float* grad_weight, float* grad_bias, float* workspace, std::int64_t rows,
                     std::int64_t channels, cudaStream_t stream) {
  // The scalar path reads the mask bit by bit; the mask's byte layout needs C % 8 == 0.
  if (mask != nullptr && channels % 8 != 0) return cudaErrorInvalidValue;
  if (mask == nullptr && y == nullptr) return cudaErrorInvalidValue;
  const int C = static_cast<int>(channels);
#define ORCH_BWD(T, V)                                                                   \
  backward_impl<T, V>(t, dy, y, mask, x, weight, save_mean, save_invstd, dx, d_residual, \
                      grad_weight, grad_bias, workspace, rows, C, stream)
  if (dtype == Dtype::kHalf) return t.vec == 8 ? ORCH_BWD(__half, 8) : ORCH_BWD(__half, 1);
  return t.vec == 8 ? ORCH_BWD(__nv_bfloat16, 8) : ORCH_BWD(__nv_bfloat16, 1);
#undef ORCH_BWD
}

std::int64_t stats_coef_offset(const Tiling& t, std::int64_t channels) {
  return static_cast<std::int64_t>(t.reduce_grid_r) * 3 * channels;
}

cudaError_t batch_stats(Dtype dtype, const Tiling& t, const void* x, const float* weight,
                        const float* bias, float* running_mean, float* running_var,
                        float* save_mean, float* save_invstd, float* workspace, std::int64_t rows,
                        std::int64_t channels, float momentum, float eps, cudaStream_t stream) {
  const int C = static_cast<int>(channels);
  const dim3 grid(t.grid_c, t.reduce_grid_r), block(t.threads_c, t.threads_r);
  orch::discard_pending_cuda_error();
  if (dtype == Dtype::kHalf) {
    if (t.vec == 8)
      stats_partial<__half, 8>
          <<<grid, block, 0, stream>>>(static_cast<const __half*>(x), rows, C, workspace);
    else
      stats_partial<__half, 1>
          <<<grid, block, 0, stream>>>(static_cast<const __half*>(x), rows, C, workspace);
  } else {
    if (t.vec == 8)
      stats_partial<__nv_bfloat16, 8>
          <<<grid, block, 0, stream>>>(static_cast<const __nv_bfloat16*>(x), rows, C, workspace);
    else
      stats_partial<__nv_bfloat16, 1>
          <<<grid, block, 0, stream>>>(static_cast<const __nv_bfloat16*>(x), rows, C, workspace);
  }
  stats_finalize<<<div_up(C, kFinC), dim3(kFinC, kFinLanes), 0, stream>>>(
      workspace, t.reduce_grid_r, C, weight, bias, running_mean, running_var, save_mean,
      save_invstd, workspace + stats_coef_offset(t, channels), momentum, eps);
  return cudaGetLastError();
}

cudaError_t backward_coefficients(const float* partial, int parts, std::int64_t channels,
                                  std::int64_t rows, const float* weight, const float* save_mean,
                                  const float* save_invstd, float* grad_weight, float* grad_bias,
                                  float* coef, cudaStream_t stream) {
  const int C = static_cast<int>(channels);
  orch::discard_pending_cuda_error();
  backward_finalize<<<div_up(C, kFinC), dim3(kFinC, kFinLanes), 0, stream>>>(
      partial, parts, C, rows, weight, save_mean, save_invstd, grad_weight, grad_bias, coef);
  return cudaGetLastError();
}

cudaError_t kernel_attributes(cudaFuncAttributes* attributes) {
  return cudaFuncGetAttributes(attributes, sums_finalize);
}

}  // namespace orch::resnet::kernels
