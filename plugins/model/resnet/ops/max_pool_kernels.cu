// The channels-last max-pool kernels of max_pool_kernels.h. One thread per (pixel, 16-byte
// group of channels) in both passes: channels are innermost in NHWC, so a warp's loads and
// stores are contiguous. Each thread's place and window come from max_pool_index.h (32-bit,
// checked against ATen on the CPU).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "float_convert.cuh"
#include "max_pool_index.h"
#include "max_pool_kernels.h"
#include "orch/cuda_launch.h"

namespace orch::resnet::max_pool_kernels {
namespace {

constexpr int kThreads = 256;

using cuda::from_float;
using cuda::to_float;

// VEC elements of T in one 16-byte load/store.
template <class T>
struct alignas(16) Vec {
  static constexpr int kN = 16 / sizeof(T);
  T v[kN];
};

template <class T>
__global__ void forward_kernel(Dims d, std::uint32_t threads, const T* __restrict__ x,
                               T* __restrict__ y, std::uint8_t* __restrict__ where) {
  constexpr int N = Vec<T>::kN;
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= threads) return;
  const Place at = place_of(i, d.groups, d.out_h, d.out_w);
  const std::int64_t c = static_cast<std::int64_t>(d.groups) * N;
  const Window win =
      window_of(static_cast<std::int32_t>(at.row), static_cast<std::int32_t>(at.col), d);
  float best[N];
  std::uint8_t pos[N];
  const std::uint8_t first = position(win.hs, win.ws, win.h0, win.w0, d.kernel);
#pragma unroll
  for (int k = 0; k < N; ++k) {
    best[k] = -INFINITY;  // ATen starts from its lowest value too; ties keep the first
    pos[k] = first;
  }
  for (std::int32_t ih = win.hs; ih < win.he; ++ih) {
    const T* row = x + (static_cast<std::int64_t>(at.n) * d.h + ih) * d.w * c + at.group * N;
    for (std::int32_t iw = win.ws; iw < win.we; ++iw) {
      const Vec<T> v = *reinterpret_cast<const Vec<T>*>(row + iw * c);
      const std::uint8_t p = position(ih, iw, win.h0, win.w0, d.kernel);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const float f = to_float(v.v[k]);
        if (f > best[k] || isnan(f)) {  // ATen's rule: a NaN wins and propagates
          best[k] = f;
          pos[k] = p;
        }
      }
    }
  }
  const std::int64_t o = static_cast<std::int64_t>(at.pixel) * c + at.group * N;
  Vec<T> out;
#pragma unroll
  for (int k = 0; k < N; ++k) out.v[k] = from_float<T>(best[k]);  // exact: best is a T
  *reinterpret_cast<Vec<T>*>(y + o) = out;
  if constexpr (N == 8) {
    uint2 packed;
    packed.x = pos[0] | (pos[1] << 8) | (pos[2] << 16) | (static_cast<unsigned>(pos[3]) << 24);
    packed.y = pos[4] | (pos[5] << 8) | (pos[6] << 16) | (static_cast<unsigned>(pos[7]) << 24);
    *reinterpret_cast<uint2*>(where + o) = packed;
  } else {
    *reinterpret_cast<unsigned*>(where + o) =
        pos[0] | (pos[1] << 8) | (pos[2] << 16) | (static_cast<unsigned>(pos[3]) << 24);
  }
}

template <class T>
__global__ void backward_kernel(Dims d, std::uint32_t threads, const T* __restrict__ dy,
                                const std::uint8_t* __restrict__ where, T* __restrict__ dx) {
  constexpr int N = Vec<T>::kN;
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= threads) return;
  const Place at = place_of(i, d.groups, d.h, d.w);
  const std::int64_t c = static_cast<std::int64_t>(d.groups) * N;
  const auto ih = static_cast<std::int32_t>(at.row), iw = static_cast<std::int32_t>(at.col);
  const Range r = windows_containing(ih, iw, d);
  float sum[N];
#pragma unroll
  for (int k = 0; k < N; ++k) sum[k] = 0.f;
  for (std::int32_t oh = r.ohs; oh < r.ohe; ++oh) {
    for (std::int32_t ow = r.ows; ow < r.owe; ++ow) {
      const std::int64_t o =
          ((static_cast<std::int64_t>(at.n) * d.out_h + oh) * d.out_w + ow) * c + at.group * N;
      const std::uint8_t mine =
          position(ih, iw, oh * d.stride - d.padding, ow * d.stride - d.padding, d.kernel);
      std::uint8_t pos[N];
      if constexpr (N == 8) {
        const uint2 packed = *reinterpret_cast<const uint2*>(where + o);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          pos[k] = static_cast<std::uint8_t>(packed.x >> (8 * k));
          pos[k + 4] = static_cast<std::uint8_t>(packed.y >> (8 * k));
        }
      } else {
        const unsigned packed = *reinterpret_cast<const unsigned*>(where + o);
#pragma unroll
        for (int k = 0; k < 4; ++k) pos[k] = static_cast<std::uint8_t>(packed >> (8 * k));
      }
      bool any = false;
#pragma unroll
      for (int k = 0; k < N; ++k) any = any || pos[k] == mine;
      if (!any) continue;  // most windows: skip the gradient's load
      const Vec<T> g = *reinterpret_cast<const Vec<T>*>(dy + o);
#pragma unroll
      for (int k = 0; k < N; ++k)
        if (pos[k] == mine) sum[k] += to_float(g.v[k]);
    }
  }
  Vec<T> out;
#pragma unroll
  for (int k = 0; k < N; ++k) out.v[k] = from_float<T>(sum[k]);
  *reinterpret_cast<Vec<T>*>(dx + static_cast<std::int64_t>(at.pixel) * c + at.group * N) = out;
}

unsigned blocks_for(std::uint32_t threads) { return (threads + kThreads - 1) / kThreads; }

Dims dims_of(const Shape& s, int per_vector) {
  Dims d;
  d.n = static_cast<std::uint32_t>(s.n);
  d.h = static_cast<std::uint32_t>(s.h);
  d.w = static_cast<std::uint32_t>(s.w);
  d.out_h = static_cast<std::uint32_t>(s.out_h());
  d.out_w = static_cast<std::uint32_t>(s.out_w());
  d.groups = static_cast<std::uint32_t>(s.c / per_vector);
  d.kernel = s.kernel;
  d.stride = s.stride;
  d.padding = s.padding;
  return d;
}

template <class T>
cudaError_t forward_t(const Shape& s, const void* x, void* y, std::uint8_t* where,
                      cudaStream_t stream) {
  const Dims d = dims_of(s, Vec<T>::kN);
  const auto threads = static_cast<std::uint32_t>(s.n * s.out_h() * s.out_w() * d.groups);
  orch::discard_pending_cuda_error();
  forward_kernel<T><<<blocks_for(threads), kThreads, 0, stream>>>(
      d, threads, static_cast<const T*>(x), static_cast<T*>(y), where);
  return cudaGetLastError();
}

template <class T>
cudaError_t backward_t(const Shape& s, const void* dy, const std::uint8_t* where, void* dx,
                       cudaStream_t stream) {
  const Dims d = dims_of(s, Vec<T>::kN);
  const auto threads = static_cast<std::uint32_t>(s.n * s.h * s.w * d.groups);
  orch::discard_pending_cuda_error();
  backward_kernel<T><<<blocks_for(threads), kThreads, 0, stream>>>(
      d, threads, static_cast<const T*>(dy), where, static_cast<T*>(dx));
  return cudaGetLastError();
}

}  // namespace

cudaError_t kernel_attributes(cudaFuncAttributes* attributes) {
  return cudaFuncGetAttributes(attributes, forward_kernel<__half>);
}

bool supported(const Shape& s, Dtype dtype) {
  const int per16 = dtype == Dtype::kFloat ? 4 : 8;
  // Threads index with 32-bit arithmetic (max_pool_index.h): the larger pass (the backward,
  // one thread per input pixel and group) must count fewer than 2^32 - kThreads.
  constexpr std::int64_t kMaxThreads = (std::int64_t{1} << 32) - kThreads;
  return s.kernel >= 1 && s.kernel <= 15 && s.stride >= 1 && s.padding >= 0 &&
         2 * s.padding <= s.kernel && s.n > 0 && s.c > 0 && s.c % per16 == 0 && s.out_h() > 0 &&
         s.out_w() > 0 && s.h < (std::int64_t{1} << 30) && s.w < (std::int64_t{1} << 30) &&
         s.n * s.h * s.w * (s.c / per16) < kMaxThreads &&
         s.n * s.out_h() * s.out_w() * (s.c / per16) < kMaxThreads;
}

cudaError_t forward(Dtype dtype, const Shape& s, const void* x, void* y, std::uint8_t* where,
                    cudaStream_t stream) {
  switch (dtype) {
    case Dtype::kFloat:
      return forward_t<float>(s, x, y, where, stream);
    case Dtype::kHalf:
      return forward_t<__half>(s, x, y, where, stream);
    case Dtype::kBFloat16:
      return forward_t<__nv_bfloat16>(s, x, y, where, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t backward(Dtype dtype, const Shape& s, const void* dy, const std::uint8_t* where,
                     void* dx, cudaStream_t stream) {
  switch (dtype) {
    case Dtype::kFloat:
      return backward_t<float>(s, dy, where, dx, stream);
    case Dtype::kHalf:
      return backward_t<__half>(s, dy, where, dx, stream);
    case Dtype::kBFloat16:
      return backward_t<__nv_bfloat16>(s, dy, where, dx, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace orch::resnet::max_pool_kernels
