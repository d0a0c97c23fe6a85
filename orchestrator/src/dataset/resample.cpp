#include "dataset/resample.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace orch::dataset {

void resample_bilinear(const RgbImage& src, const BoxF& box, int out_w, int out_h, bool flip,
                       std::uint8_t* out) {
  resample_bilinear(src.pixels.data(), src.width, src.height, box, out_w, out_h, flip, out);
}

void resample_bilinear(const std::uint8_t* src, int src_w, int src_h, const BoxF& box, int out_w,
                       int out_h, bool flip, std::uint8_t* out) {
  // Column taps are computed once per image; weights in 1/256ths keep the inner loop integer.
  std::vector<int> x_lo(static_cast<std::size_t>(out_w)), x_w(static_cast<std::size_t>(out_w));
  const double sx = box.w / out_w, sy = box.h / out_h;
  for (int ox = 0; ox < out_w; ++ox) {
    const double fx = std::clamp(box.x + (ox + 0.5) * sx - 0.5, 0.0, src_w - 1.0);
    const int lo = std::min(static_cast<int>(fx), std::max(src_w - 2, 0));
    const int dst = flip ? out_w - 1 - ox : ox;
    x_lo[static_cast<std::size_t>(dst)] = lo;
    x_w[static_cast<std::size_t>(dst)] =
        src_w > 1 ? static_cast<int>(std::lround((fx - lo) * 256)) : 0;
  }
  const std::size_t stride = static_cast<std::size_t>(src_w) * 3;
  const int x_step = src_w > 1 ? 3 : 0;
  for (int oy = 0; oy < out_h; ++oy) {
    const double fy = std::clamp(box.y + (oy + 0.5) * sy - 0.5, 0.0, src_h - 1.0);
    const int y0 = std::min(static_cast<int>(fy), std::max(src_h - 2, 0));
    const int wy = src_h > 1 ? static_cast<int>(std::lround((fy - y0) * 256)) : 0;
    const std::uint8_t* r0 = src + static_cast<std::size_t>(y0) * stride;
    const std::uint8_t* r1 = src_h > 1 ? r0 + stride : r0;
    std::uint8_t* o = out + static_cast<std::size_t>(oy) * out_w * 3;
    for (int ox = 0; ox < out_w; ++ox) {
      const int wx = x_w[static_cast<std::size_t>(ox)];
      const std::size_t i = static_cast<std::size_t>(x_lo[static_cast<std::size_t>(ox)]) * 3;
      for (int c = 0; c < 3; ++c) {
        const int top = r0[i + c] * (256 - wx) + r0[i + x_step + c] * wx;
        const int bottom = r1[i + c] * (256 - wx) + r1[i + x_step + c] * wx;
        o[ox * 3 + c] = static_cast<std::uint8_t>((top * (256 - wy) + bottom * wy + 32768) >> 16);
      }
    }
  }
}

void normalize_imagenet(const std::uint8_t* hwc, int width, int height, bool channels_last,
                        float* out) {
  float lut[3][256];
  for (int c = 0; c < 3; ++c)
    for (int v = 0; v < 256; ++v) lut[c][v] = (v / 255.0f - kImagenetMean[c]) / kImagenetStd[c];
  const std::size_t n = static_cast<std::size_t>(width) * height;
  if (channels_last) {
    for (std::size_t i = 0; i < n; ++i)
      for (int c = 0; c < 3; ++c) out[i * 3 + c] = lut[c][hwc[i * 3 + c]];
    return;
  }
  float* planes[3] = {out, out + n, out + 2 * n};
  for (std::size_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) planes[c][i] = lut[c][hwc[i * 3 + c]];
}

}  // namespace orch::dataset
