// See crop_resize.h. One thread per output pixel (3 channels); blockIdx.y is the image.
#include "crop_resize.h"
#include "orch/cuda_launch.h"

namespace orch::nvjpeg {
namespace {

// ImageNet mean and std, as in <orch/imagedata/resample.h> (the CPU loaders' normalize_imagenet).
__constant__ float kMean[3] = {0.485f, 0.456f, 0.406f};
__constant__ float kStd[3] = {0.229f, 0.224f, 0.225f};

__global__ void crop_resize_kernel(const CropJob* jobs, const std::uint8_t* pixels, int s,
                                   bool channels_last, float* out) {
  const int img = blockIdx.y;
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= s * s) return;
  const CropJob j = jobs[img];
  const int oy = p / s, ox = p % s;
  // The same sampling positions as resample_bilinear (resample.cpp): computed in double there;
  // float here is exact enough for images under 2^20 pixels a side (the weights are rounded to
  // 1/256 anyway), checked against the CPU in the GPU tests.
  const int sx_out = j.flip ? s - 1 - ox : ox;  // output column ox shows source column of sx_out
  const float fx = fminf(fmaxf(j.box_x + (sx_out + 0.5f) * (j.box_w / s) - 0.5f, 0.f),
                         static_cast<float>(j.width - 1));
  const float fy = fminf(fmaxf(j.box_y + (oy + 0.5f) * (j.box_h / s) - 0.5f, 0.f),
                         static_cast<float>(j.height - 1));
  const int x0 = min(static_cast<int>(fx), max(j.width - 2, 0));
  const int y0 = min(static_cast<int>(fy), max(j.height - 2, 0));
  const int x1 = j.width > 1 ? x0 + 1 : x0;
  const int y1 = j.height > 1 ? y0 + 1 : y0;
  const unsigned wx = j.width > 1 ? static_cast<unsigned>(lrintf((fx - x0) * 256.f)) : 0u;
  const unsigned wy = j.height > 1 ? static_cast<unsigned>(lrintf((fy - y0) * 256.f)) : 0u;
  const std::uint8_t* src = pixels + j.offset;
  // The four corners' RGB: read from interleaved RGB, or converted from the Y, Cb, Cr planes
  // (the whole block is one image, so the branch does not diverge).
  std::uint8_t p00[3], p01[3], p10[3], p11[3];  // p<row><column>
  if (j.format == kCropYcc) {
    ycc_pixel_rgb(src, j.planes, x0, y0, p00);
    ycc_pixel_rgb(src, j.planes, x1, y0, p01);
    ycc_pixel_rgb(src, j.planes, x0, y1, p10);
    ycc_pixel_rgb(src, j.planes, x1, y1, p11);
  } else {
    const std::int64_t stride = static_cast<std::int64_t>(j.width) * 3;
    const std::uint8_t* r0 = src + y0 * stride;
    const std::uint8_t* r1 = src + y1 * stride;
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      p00[c] = r0[x0 * 3 + c];
      p01[c] = r0[x1 * 3 + c];
      p10[c] = r1[x0 * 3 + c];
      p11[c] = r1[x1 * 3 + c];
    }
  }
  const std::int64_t plane = static_cast<std::int64_t>(s) * s;
  float* o = out + img * plane * 3;
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    const unsigned h0 = p00[c] * (256u - wx) + p01[c] * wx;
    const unsigned h1 = p10[c] * (256u - wx) + p11[c] * wx;
    const unsigned v = (h0 * (256u - wy) + h1 * wy + 32768u) >> 16;
    const float f = (static_cast<float>(v) / 255.f - kMean[c]) / kStd[c];
    if (channels_last)
      o[static_cast<std::int64_t>(p) * 3 + c] = f;
    else
      o[c * plane + p] = f;
  }
}

}  // namespace

cudaError_t crop_resize_attributes(cudaFuncAttributes* attributes) {
  return cudaFuncGetAttributes(attributes, crop_resize_kernel);
}

cudaError_t crop_resize_normalize(const CropJob* jobs, int n, const std::uint8_t* pixels,
                                  int out_size, bool channels_last, float* out,
                                  cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const dim3 grid((out_size * out_size + kThreads - 1) / kThreads, n);
  orch::discard_pending_cuda_error();
  crop_resize_kernel<<<grid, kThreads, 0, stream>>>(jobs, pixels, out_size, channels_last, out);
  return cudaGetLastError();
}

}  // namespace orch::nvjpeg
