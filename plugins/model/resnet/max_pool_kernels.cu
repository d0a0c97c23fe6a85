// See max_pool_kernels.h. One thread per (pixel, 16-byte group of channels) in both passes:
// channels are innermost in NHWC, so a warp's loads and stores are contiguous.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "float_convert.cuh"
#include "max_pool_kernels.h"

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
__global__ void forward_kernel(Shape s, std::int64_t out_h, std::int64_t out_w, const T* __restrict__ x,
                               T* __restrict__ y, std::uint8_t* __restrict__ where) {
  constexpr int N = Vec<T>::kN;
  const std::int64_t groups = s.c / N;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= s.n * out_h * out_w * groups) return;
  const std::int64_t g = i % groups;
  const std::int64_t pixel = i / groups;  // n * out_h * out_w + oh * out_w + ow
  const std::int64_t ow = pixel % out_w;
  const std::int64_t oh = (pixel / out_w) % out_h;
  const std::int64_t n = pixel / (out_w * out_h);
  const std::int64_t h0 = oh * s.stride - s.padding, w0 = ow * s.stride - s.padding;
  // The window clipped to the image, scanned row-major like ATen's kernels.
  const std::int64_t hs = h0 < 0 ? 0 : h0, ws = w0 < 0 ? 0 : w0;
  const std::int64_t he = min(h0 + s.kernel, s.h), we = min(w0 + s.kernel, s.w);
  float best[N];
  std::uint8_t pos[N];
  const std::uint8_t first = static_cast<std::uint8_t>((hs - h0) * s.kernel + (ws - w0));
#pragma unroll
  for (int k = 0; k < N; ++k) {
    best[k] = -INFINITY;  // ATen starts from its lowest value too; ties keep the first
    pos[k] = first;
  }
  for (std::int64_t ih = hs; ih < he; ++ih) {
    for (std::int64_t iw = ws; iw < we; ++iw) {
      const Vec<T> v =
          *reinterpret_cast<const Vec<T>*>(x + ((n * s.h + ih) * s.w + iw) * s.c + g * N);
      const auto p = static_cast<std::uint8_t>((ih - h0) * s.kernel + (iw - w0));
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
  Vec<T> out;
#pragma unroll
  for (int k = 0; k < N; ++k) out.v[k] = from_float<T>(best[k]);  // exact: best is a T
  *reinterpret_cast<Vec<T>*>(y + pixel * s.c + g * N) = out;
  std::uint8_t* w = where + pixel * s.c + g * N;
  if constexpr (N == 8) {
    uint2 packed;
    packed.x = pos[0] | (pos[1] << 8) | (pos[2] << 16) | (static_cast<unsigned>(pos[3]) << 24);
    packed.y = pos[4] | (pos[5] << 8) | (pos[6] << 16) | (static_cast<unsigned>(pos[7]) << 24);
    *reinterpret_cast<uint2*>(w) = packed;
  } else {
    *reinterpret_cast<unsigned*>(w) =
        pos[0] | (pos[1] << 8) | (pos[2] << 16) | (static_cast<unsigned>(pos[3]) << 24);
  }
}

template <class T>
__global__ void backward_kernel(Shape s, std::int64_t out_h, std::int64_t out_w,
                                const T* __restrict__ dy, const std::uint8_t* __restrict__ where,
                                T* __restrict__ dx) {
  constexpr int N = Vec<T>::kN;
  const std::int64_t groups = s.c / N;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= s.n * s.h * s.w * groups) return;
  const std::int64_t g = i % groups;
  const std::int64_t pixel = i / groups;  // n * h * w + ih * w + iw
  const std::int64_t iw = pixel % s.w;
  const std::int64_t ih = (pixel / s.w) % s.h;
  const std::int64_t n = pixel / (s.w * s.h);
  // The windows that contain (ih, iw): ATen's p_start / p_end.
  const auto first_window = [&](std::int64_t i_) {
    return i_ + s.padding < s.kernel ? 0 : (i_ + s.padding - s.kernel) / s.stride + 1;
  };
  const std::int64_t ohs = first_window(ih), ows = first_window(iw);
  const std::int64_t ohe = min((ih + s.padding) / s.stride + 1, out_h);
  const std::int64_t owe = min((iw + s.padding) / s.stride + 1, out_w);
  float sum[N];
#pragma unroll
  for (int k = 0; k < N; ++k) sum[k] = 0.f;
  for (std::int64_t oh = ohs; oh < ohe; ++oh) {
    for (std::int64_t ow = ows; ow < owe; ++ow) {
      const std::int64_t o = ((n * out_h + oh) * out_w + ow) * s.c + g * N;
      const auto mine = static_cast<std::uint8_t>((ih - (oh * s.stride - s.padding)) * s.kernel +
                                                  (iw - (ow * s.stride - s.padding)));
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
      const Vec<T> d = *reinterpret_cast<const Vec<T>*>(dy + o);
#pragma unroll
      for (int k = 0; k < N; ++k)
        if (pos[k] == mine) sum[k] += to_float(d.v[k]);
    }
  }
  Vec<T> out;
#pragma unroll
  for (int k = 0; k < N; ++k) out.v[k] = from_float<T>(sum[k]);
  *reinterpret_cast<Vec<T>*>(dx + pixel * s.c + g * N) = out;
}

unsigned blocks_for(std::int64_t threads) {
  return static_cast<unsigned>((threads + kThreads - 1) / kThreads);
}

template <class T>
cudaError_t forward_t(const Shape& s, const void* x, void* y, std::uint8_t* where,
                      cudaStream_t stream) {
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  const std::int64_t threads = s.n * oh * ow * (s.c / Vec<T>::kN);
  forward_kernel<T><<<blocks_for(threads), kThreads, 0, stream>>>(
      s, oh, ow, static_cast<const T*>(x), static_cast<T*>(y), where);
  return cudaGetLastError();
}

template <class T>
cudaError_t backward_t(const Shape& s, const void* dy, const std::uint8_t* where, void* dx,
                       cudaStream_t stream) {
  const std::int64_t threads = s.n * s.h * s.w * (s.c / Vec<T>::kN);
  backward_kernel<T><<<blocks_for(threads), kThreads, 0, stream>>>(
      s, s.out_h(), s.out_w(), static_cast<const T*>(dy), where, static_cast<T*>(dx));
  return cudaGetLastError();
}

}  // namespace

bool supported(const Shape& s, Dtype dtype) {
  const int per16 = dtype == Dtype::kFloat ? 4 : 8;
  return s.kernel >= 1 && s.kernel <= 15 && s.stride >= 1 && s.padding >= 0 &&
         2 * s.padding <= s.kernel && s.n > 0 && s.c > 0 && s.c % per16 == 0 && s.out_h() > 0 &&
         s.out_w() > 0;
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
