// libjpeg's YCbCr -> RGB conversion and plain (replicating) chroma upsampling, for the nvjpeg
// loader's `output: yuv`: nvJPEG writes the JPEG's Y, Cb and Cr planes as decoded and the crop
// kernel converts the pixels it samples. Plain C++ outside nvcc (the CPU unit tests call it);
// __host__ __device__ under nvcc.
//
// The arithmetic is libjpeg's (jdcolor.c build_ycc_rgb_table and ycc_rgb_convert; jdmerge.c
// uses the same tables): with x = Cb - 128 or Cr - 128, in 16-bit fixed point,
//   R = Y + ((FIX(1.40200) * x_cr + ONE_HALF) >> 16)
//   G = Y + ((-FIX(0.34414) * x_cb + ONE_HALF - FIX(0.71414) * x_cr) >> 16)
//   B = Y + ((FIX(1.77200) * x_cb + ONE_HALF) >> 16)
// each clamped to 0..255, >> an arithmetic shift. nvJPEG's interleaved RGB from the hardware
// JPEG engines equals libjpeg-turbo with do_fancy_upsampling = FALSE (GPU test), so this with
// plain upsampling reproduces it from the planes.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define ORCH_YCC_HD __host__ __device__
#else
#define ORCH_YCC_HD
#endif

namespace orch::nvjpeg {

namespace ycc {
// FIX(x) = (INT32)(x * (1 << 16) + 0.5), as libjpeg writes it.
constexpr std::int32_t kScaleBits = 16;
constexpr std::int32_t kOneHalf = std::int32_t{1} << (kScaleBits - 1);
constexpr std::int32_t kCrR = static_cast<std::int32_t>(1.40200 * 65536 + 0.5);
constexpr std::int32_t kCbB = static_cast<std::int32_t>(1.77200 * 65536 + 0.5);
constexpr std::int32_t kCrG = static_cast<std::int32_t>(0.71414 * 65536 + 0.5);
constexpr std::int32_t kCbG = static_cast<std::int32_t>(0.34414 * 65536 + 0.5);
static_assert(kCrR == 91881 && kCbB == 116130 && kCrG == 46802 && kCbG == 22554,
              "libjpeg's FIX() constants");

ORCH_YCC_HD inline std::uint8_t clamp255(std::int32_t v) {
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}
}  // namespace ycc

/// One pixel: Y, Cb, Cr (0..255) to R, G, B into rgb[0..2], bit for bit as libjpeg.
ORCH_YCC_HD inline void ycc_to_rgb(int y, int cb, int cr, std::uint8_t* rgb) {
  const std::int32_t xb = cb - 128, xr = cr - 128;
  // Signed >> is arithmetic in C++20 and in CUDA (implementation-defined but so in C++17 on
  // GCC, Clang and nvcc), as libjpeg's RIGHT_SHIFT assumes.
  rgb[0] = ycc::clamp255(y + ((ycc::kCrR * xr + ycc::kOneHalf) >> ycc::kScaleBits));
  rgb[1] =
      ycc::clamp255(y + ((-ycc::kCbG * xb + ycc::kOneHalf - ycc::kCrG * xr) >> ycc::kScaleBits));
  rgb[2] = ycc::clamp255(y + ((ycc::kCbB * xb + ycc::kOneHalf) >> ycc::kScaleBits));
}

/// Where one image's planes lie, as nvJPEG's NVJPEG_OUTPUT_YUV writes them: byte offsets from
/// the image's first byte, row pitches, and the chroma subsampling as luma/chroma size ratios
/// (2 x 2 for 4:2:0). A grayscale JPEG (components 1) has only Y: R = G = B = Y.
struct YccLayout {
  std::int64_t offset[3] = {0, 0, 0};  ///< Y, Cb, Cr
  std::int32_t pitch[3] = {0, 0, 0};
  std::int32_t h_factor = 1, v_factor = 1;  ///< 1, 2 or 4 each
  std::int32_t components = 3;              ///< 3 (Y, Cb, Cr) or 1 (Y)
};

/// The RGB of luma pixel (x, y), with plain upsampling: its chroma sample is
/// (x / h_factor, y / v_factor), libjpeg's replication with do_fancy_upsampling = FALSE.
ORCH_YCC_HD inline void ycc_pixel_rgb(const std::uint8_t* image, const YccLayout& l, int x, int y,
                                      std::uint8_t* rgb) {
  const int luma = image[l.offset[0] + static_cast<std::int64_t>(y) * l.pitch[0] + x];
  if (l.components == 1) {
    rgb[0] = rgb[1] = rgb[2] = static_cast<std::uint8_t>(luma);
    return;
  }
  const int cx = x / l.h_factor, cy = y / l.v_factor;
  ycc_to_rgb(luma, image[l.offset[1] + static_cast<std::int64_t>(cy) * l.pitch[1] + cx],
             image[l.offset[2] + static_cast<std::int64_t>(cy) * l.pitch[2] + cx], rgb);
}

/// The subsampling factor between a luma and a chroma plane dimension: the smallest f of 1, 2,
/// 4 with ceil(luma / f) == chroma (libjpeg's downsampled size, rounded up for odd sizes), or 0
/// when none fits. Where two fit (luma <= 2), every luma index maps to the same chroma index
/// with either.
inline int chroma_factor(int luma, int chroma) {
  for (int f = 1; f <= 4; f *= 2)
    if (luma > 0 && (luma + f - 1) / f == chroma) return f;
  return 0;
}

/// Lays out one image's planes for NVJPEG_OUTPUT_YUV from the per-component sizes nvJPEG's
/// header parse reports (nvjpegGetImageInfo): each plane packed at a multiple of `align`
/// bytes, its pitch its width. A grayscale image gets two more planes of its luma size that
/// the kernel never reads, so whatever nvJPEG writes to channels 1 and 2 lands in the buffer.
/// Returns the bytes the image needs, or -1 when the kernel cannot convert it (not 1 or 3
/// components, Cb and Cr of different sizes, a factor other than 1, 2 or 4): such an image is
/// decoded to interleaved RGB instead.
inline std::int64_t ycc_layout(int components, const int* widths, const int* heights,
                               YccLayout& out, std::int64_t align = 256) {
  if (components != 1 && components != 3) return -1;
  if (widths[0] <= 0 || heights[0] <= 0) return -1;
  YccLayout l;
  l.components = components;
  int w[3] = {widths[0], widths[0], widths[0]}, h[3] = {heights[0], heights[0], heights[0]};
  if (components == 3) {
    if (widths[1] != widths[2] || heights[1] != heights[2]) return -1;
    l.h_factor = chroma_factor(widths[0], widths[1]);
    l.v_factor = chroma_factor(heights[0], heights[1]);
    if (l.h_factor == 0 || l.v_factor == 0) return -1;
    w[1] = w[2] = widths[1];
    h[1] = h[2] = heights[1];
  }
  std::int64_t total = 0;
  for (int c = 0; c < 3; ++c) {
    total = (total + align - 1) / align * align;
    l.offset[c] = total;
    l.pitch[c] = w[c];
    total += static_cast<std::int64_t>(w[c]) * h[c];
  }
  out = l;
  return total;
}

}  // namespace orch::nvjpeg
