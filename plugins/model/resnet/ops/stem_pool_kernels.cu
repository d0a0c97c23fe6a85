// The fused stem kernels of stem_pool_kernels.h. Each thread owns 8 channels (one 16-byte
// vector) of one pixel: channels are innermost in NHWC, so a warp's loads are contiguous. The
// window arithmetic is max_pool_index.h's (checked against ATen on the CPU).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "float_convert.cuh"
#include "max_pool_index.h"
#include "orch/cuda_launch.h"
#include "stem_pool_kernels.h"

namespace orch::resnet::stem_pool_kernels {
namespace {

using cuda::from_float;
using cuda::to_float;
using max_pool_kernels::Dims;
using max_pool_kernels::Place;
using max_pool_kernels::place_of;
using max_pool_kernels::position;
using max_pool_kernels::Range;
using max_pool_kernels::Window;
using max_pool_kernels::window_of;
using max_pool_kernels::windows_containing;

constexpr int kThreads = 256;
constexpr int kN = 8;  // values per 16-byte vector (half and bfloat16)

template <class T>
struct alignas(16) Vec {
  T v[kN];
};

// Eight winner bytes in one 8-byte load or store.
__device__ __forceinline__ void unpack(uint2 p, std::uint8_t (&b)[kN]) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    b[k] = static_cast<std::uint8_t>(p.x >> (8 * k));
    b[k + 4] = static_cast<std::uint8_t>(p.y >> (8 * k));
  }
}

__device__ __forceinline__ uint2 pack(const std::uint8_t (&b)[kN]) {
  uint2 p;
  p.x = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<unsigned>(b[3]) << 24);
  p.y = b[4] | (b[5] << 8) | (b[6] << 16) | (static_cast<unsigned>(b[7]) << 24);
  return p;
}

// The batch-norm + ReLU of one element, rounded to T as the unfused path stores it (fmaf and
// the rounding are monotone, so max and tie order are the stored values').
template <class T>
__device__ __forceinline__ float bn_relu(T x, float scale, float shift) {
  const float v = fmaf(to_float(x), scale, shift);
  return to_float(from_float<T>(v <= 0.f ? 0.f : v));  // ReLU that keeps NaN
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(Dims d, std::uint32_t threads, const T* __restrict__ x,
                   const float* __restrict__ coef, T* __restrict__ y,
                   std::uint8_t* __restrict__ where) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= threads) return;
  const Place at = place_of(i, d.groups, d.out_h, d.out_w);
  const std::int64_t C = static_cast<std::int64_t>(d.groups) * kN;
  const int c0 = static_cast<int>(at.group) * kN;
  float scale[kN], shift[kN], best[kN];
  std::uint8_t pos[kN];
  const Window win =
      window_of(static_cast<std::int32_t>(at.row), static_cast<std::int32_t>(at.col), d);
  const std::uint8_t first = position(win.hs, win.ws, win.h0, win.w0, d.kernel);
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    scale[k] = coef[c0 + k];
    shift[k] = coef[C + c0 + k];
    best[k] = -INFINITY;
    pos[k] = first;
  }
  for (std::int32_t ih = win.hs; ih < win.he; ++ih) {
    const T* row = x + (static_cast<std::int64_t>(at.n) * d.h + ih) * d.w * C + c0;
    for (std::int32_t iw = win.ws; iw < win.we; ++iw) {
      const Vec<T> v = *reinterpret_cast<const Vec<T>*>(row + iw * C);
      const std::uint8_t p = position(ih, iw, win.h0, win.w0, d.kernel);
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        const float f = bn_relu(v.v[k], scale[k], shift[k]);
        if (f > best[k] || isnan(f)) {  // max_pool_kernels' rule: first max, a NaN wins
          best[k] = f;
          pos[k] = p;
        }
      }
    }
  }
  Vec<T> out;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    out.v[k] = from_float<T>(best[k]);  // exact: best is a T
    if (!(best[k] <= 0.f)) pos[k] |= kPasses;
  }
  const std::int64_t o = static_cast<std::int64_t>(at.pixel) * C + c0;
  *reinterpret_cast<Vec<T>*>(y + o) = out;
  *reinterpret_cast<uint2*>(where + o) = pack(pos);
}

// Block: threads_c channel vectors x (kThreads / threads_c) pooled rows, grid-strided along
// rows; the block's threads are summed in shared memory into one [3][C] partial per block row.
template <class T>
__global__ void __launch_bounds__(kThreads)
    partial_kernel(Dims d, std::int64_t pooled_rows, const T* __restrict__ dy,
                   const std::uint8_t* __restrict__ where, const T* __restrict__ x,
                   const float* __restrict__ save_mean, float* __restrict__ partial) {
  __shared__ float s_a[kThreads * kN];
  __shared__ float s_b[kThreads * kN];
  const int C = static_cast<int>(d.groups) * kN;
  const int group = blockIdx.x * blockDim.x + threadIdx.x;
  const bool active = group < static_cast<int>(d.groups);
  const int c0 = group * kN;
  float sa[kN], sb[kN], mean[kN];
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    sa[k] = sb[k] = 0.f;
    mean[k] = active ? save_mean[c0 + k] : 0.f;
  }
  const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * blockDim.y;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
       active && r < pooled_rows; r += step) {
    const std::int64_t o = r * C + c0;
    std::uint8_t b[kN];
    unpack(*reinterpret_cast<const uint2*>(where + o), b);
    const Vec<T> g = *reinterpret_cast<const Vec<T>*>(dy + o);
    const auto ow = static_cast<std::int32_t>(r % d.out_w);
    const std::int64_t image_row = r / d.out_w;
    const auto oh = static_cast<std::int32_t>(image_row % d.out_h);
    const std::int64_t n = image_row / d.out_h;
    const std::int32_t h0 = oh * d.stride - d.padding, w0 = ow * d.stride - d.padding;
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (!(b[k] & kPasses)) continue;
      const int p = b[k] & kPositionMask;
      const std::int64_t ih = h0 + p / d.kernel, iw = w0 + p % d.kernel;
      const float xv = to_float(x[((n * d.h + ih) * d.w + iw) * C + c0 + k]);
      const float gk = to_float(g.v[k]);
      sa[k] += gk;
      sb[k] = fmaf(gk, xv - mean[k], sb[k]);
    }
  }
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    s_a[tid * kN + k] = sa[k];
    s_b[tid * kN + k] = sb[k];
  }
  __syncthreads();
  for (int s = blockDim.y / 2; s > 0; s >>= 1) {
    if (threadIdx.y < s) {
      const int o = tid + s * blockDim.x;
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        s_a[tid * kN + k] += s_a[o * kN + k];
        s_b[tid * kN + k] += s_b[o * kN + k];
      }
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && active) {
    float* p = partial + static_cast<std::int64_t>(blockIdx.y) * 3 * C;
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      p[c0 + k] = s_a[tid * kN + k];
      p[C + c0 + k] = s_b[tid * kN + k];
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    apply_kernel(Dims d, std::uint32_t threads, const T* __restrict__ dy,
                 const std::uint8_t* __restrict__ where, const T* __restrict__ x,
                 const float* __restrict__ coef, T* __restrict__ dx) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= threads) return;
  const Place at = place_of(i, d.groups, d.h, d.w);
  const std::int64_t C = static_cast<std::int64_t>(d.groups) * kN;
  const int c0 = static_cast<int>(at.group) * kN;
  const auto ih = static_cast<std::int32_t>(at.row), iw = static_cast<std::int32_t>(at.col);
  const Range r = windows_containing(ih, iw, d);
  float sum[kN];
#pragma unroll
  for (int k = 0; k < kN; ++k) sum[k] = 0.f;
  for (std::int32_t oh = r.ohs; oh < r.ohe; ++oh) {
    for (std::int32_t ow = r.ows; ow < r.owe; ++ow) {
      const std::int64_t o =
          ((static_cast<std::int64_t>(at.n) * d.out_h + oh) * d.out_w + ow) * C + c0;
      const std::uint8_t mine =
          position(ih, iw, oh * d.stride - d.padding, ow * d.stride - d.padding, d.kernel) |
          kPasses;
      std::uint8_t b[kN];
      unpack(*reinterpret_cast<const uint2*>(where + o), b);
      bool any = false;
#pragma unroll
      for (int k = 0; k < kN; ++k) any = any || b[k] == mine;
      if (!any) continue;  // most windows: skip the gradient's load
      const Vec<T> g = *reinterpret_cast<const Vec<T>*>(dy + o);
#pragma unroll
      for (int k = 0; k < kN; ++k)
        if (b[k] == mine) sum[k] += to_float(g.v[k]);
    }
  }
  const std::int64_t off = static_cast<std::int64_t>(at.pixel) * C + c0;
  const Vec<T> xv = *reinterpret_cast<const Vec<T>*>(x + off);
  Vec<T> out;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const float v =
        fmaf(coef[c0 + k], sum[k], fmaf(coef[C + c0 + k], to_float(xv.v[k]), coef[2 * C + c0 + k]));
    out.v[k] = from_float<T>(v);
  }
  *reinterpret_cast<Vec<T>*>(dx + off) = out;
}

unsigned blocks_for(std::uint32_t threads) { return (threads + kThreads - 1) / kThreads; }

Dims dims_of(const Shape& s) {
  Dims d;
  d.n = static_cast<std::uint32_t>(s.n);
  d.h = static_cast<std::uint32_t>(s.h);
  d.w = static_cast<std::uint32_t>(s.w);
  d.out_h = static_cast<std::uint32_t>(s.out_h());
  d.out_w = static_cast<std::uint32_t>(s.out_w());
  d.groups = static_cast<std::uint32_t>(s.c / kN);
  d.kernel = s.kernel;
  d.stride = s.stride;
  d.padding = s.padding;
  return d;
}

// The partial pass's block: channel vectors along x (a power of two up to 32), rows along y.
dim3 partial_block(const Dims& d) {
  unsigned tc = 1;
  while (tc < d.groups && tc < 32) tc *= 2;
  return dim3(tc, kThreads / tc);
}

template <class T>
cudaError_t forward_t(const Shape& s, const void* x, const float* coef, void* y,
                      std::uint8_t* where, cudaStream_t stream) {
  const Dims d = dims_of(s);
  const auto threads = static_cast<std::uint32_t>(s.n * s.out_h() * s.out_w() * d.groups);
  orch::discard_pending_cuda_error();
  forward_kernel<T><<<blocks_for(threads), kThreads, 0, stream>>>(
      d, threads, static_cast<const T*>(x), coef, static_cast<T*>(y), where);
  return cudaGetLastError();
}

template <class T>
cudaError_t partial_t(const Shape& s, const void* dy, const std::uint8_t* where, const void* x,
                      const float* save_mean, float* partial, int parts, cudaStream_t stream) {
  const Dims d = dims_of(s);
  const dim3 block = partial_block(d);
  const dim3 grid((d.groups + block.x - 1) / block.x, static_cast<unsigned>(parts));
  orch::discard_pending_cuda_error();
  partial_kernel<T><<<grid, block, 0, stream>>>(d, s.n * s.out_h() * s.out_w(),
                                                static_cast<const T*>(dy), where,
                                                static_cast<const T*>(x), save_mean, partial);
  return cudaGetLastError();
}

template <class T>
cudaError_t apply_t(const Shape& s, const void* dy, const std::uint8_t* where, const void* x,
                    const float* coef, void* dx, cudaStream_t stream) {
  const Dims d = dims_of(s);
  const auto threads = static_cast<std::uint32_t>(s.n * s.h * s.w * d.groups);
  orch::discard_pending_cuda_error();
  apply_kernel<T><<<blocks_for(threads), kThreads, 0, stream>>>(
      d, threads, static_cast<const T*>(dy), where, static_cast<const T*>(x), coef,
      static_cast<T*>(dx));
  return cudaGetLastError();
}

}  // namespace

bool supported(const Shape& s, Dtype dtype) {
  const auto pool_dtype =
      dtype == Dtype::kHalf ? max_pool_kernels::Dtype::kHalf : max_pool_kernels::Dtype::kBFloat16;
  return max_pool_kernels::supported(s, pool_dtype) && s.kernel * s.kernel <= kPositionMask;
}

int partial_parts(const Shape& s, int sm_count) {
  const Dims d = dims_of(s);
  const dim3 block = partial_block(d);
  const std::int64_t grid_c = (d.groups + block.x - 1) / block.x;
  const std::int64_t rows = s.n * s.out_h() * s.out_w();
  // As fused_bn_kernels' reductions: ~8 rows per thread, about 4 blocks per SM in all.
  const std::int64_t cap = std::max<std::int64_t>(1, 4LL * std::max(sm_count, 1) / grid_c);
  const std::int64_t want = (rows + block.y * 8 - 1) / (block.y * 8);
  return static_cast<int>(std::clamp<std::int64_t>(want, 1, std::min<std::int64_t>(cap, 65535)));
}

cudaError_t forward(Dtype dtype, const Shape& s, const void* x, const float* coef, void* y,
                    std::uint8_t* where, cudaStream_t stream) {
  if (dtype == Dtype::kHalf) return forward_t<__half>(s, x, coef, y, where, stream);
  return forward_t<__nv_bfloat16>(s, x, coef, y, where, stream);
}

cudaError_t backward_partial(Dtype dtype, const Shape& s, const void* dy, const std::uint8_t* where,
                             const void* x, const float* save_mean, float* partial, int parts,
                             cudaStream_t stream) {
  if (dtype == Dtype::kHalf)
    return partial_t<__half>(s, dy, where, x, save_mean, partial, parts, stream);
  return partial_t<__nv_bfloat16>(s, dy, where, x, save_mean, partial, parts, stream);
}

cudaError_t backward_apply(Dtype dtype, const Shape& s, const void* dy, const std::uint8_t* where,
                           const void* x, const float* coef, void* dx, cudaStream_t stream) {
  if (dtype == Dtype::kHalf) return apply_t<__half>(s, dy, where, x, coef, dx, stream);
  return apply_t<__nv_bfloat16>(s, dy, where, x, coef, dx, stream);
}

}  // namespace orch::resnet::stem_pool_kernels
