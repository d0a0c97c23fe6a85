#include "orch/imagedata/resample.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace orch::imagedata {

void resample_bilinear(const RgbImage& src, const BoxF& box, int out_w, int out_h, bool flip,
                       std::uint8_t* out) {
  resample_bilinear(src.pixels.data(), src.width, src.height, box, out_w, out_h, flip, out);
}

void resample_bilinear(const std::uint8_t* src, int src_w, int src_h, const BoxF& box, int out_w,
                       int out_h, bool flip, std::uint8_t* out) {
  // Separable: each needed source row is resampled horizontally once (weights in 1/256ths,
  // kept unrounded in 16 bits), then pairs of those rows are blended vertically, a loop over
  // contiguous arrays the compiler vectorises. Same arithmetic as the direct 2x2 filter.
  const std::size_t row_len = static_cast<std::size_t>(out_w) * 3;
  std::vector<int> x_lo(static_cast<std::size_t>(out_w)), x_hi(x_lo.size()), x_w(x_lo.size());
  const double sx = box.w / out_w, sy = box.h / out_h;
  for (int ox = 0; ox < out_w; ++ox) {
    const double fx = std::clamp(box.x + (ox + 0.5) * sx - 0.5, 0.0, src_w - 1.0);
    const int lo = std::min(static_cast<int>(fx), std::max(src_w - 2, 0));
    const std::size_t dst = static_cast<std::size_t>(flip ? out_w - 1 - ox : ox);
    x_lo[dst] = lo * 3;
    x_hi[dst] = (src_w > 1 ? lo + 1 : lo) * 3;
    x_w[dst] = src_w > 1 ? static_cast<int>(std::lround((fx - lo) * 256)) : 0;
  }
  std::vector<std::uint16_t> rows(2 * row_len);
  std::uint16_t* h0 = rows.data();
  std::uint16_t* h1 = rows.data() + row_len;
  int have0 = -1, have1 = -1;
  const std::size_t stride = static_cast<std::size_t>(src_w) * 3;
  auto horizontal = [&](int sy, std::uint16_t* dst) {
    const std::uint8_t* r = src + static_cast<std::size_t>(sy) * stride;
    for (int ox = 0; ox < out_w; ++ox) {
      const int lo = x_lo[static_cast<std::size_t>(ox)], hi = x_hi[static_cast<std::size_t>(ox)];
      const int w = x_w[static_cast<std::size_t>(ox)];
      std::uint16_t* d = dst + ox * 3;
      d[0] = static_cast<std::uint16_t>(r[lo] * (256 - w) + r[hi] * w);
      d[1] = static_cast<std::uint16_t>(r[lo + 1] * (256 - w) + r[hi + 1] * w);
      d[2] = static_cast<std::uint16_t>(r[lo + 2] * (256 - w) + r[hi + 2] * w);
    }
  };
  for (int oy = 0; oy < out_h; ++oy) {
    const double fy = std::clamp(box.y + (oy + 0.5) * sy - 0.5, 0.0, src_h - 1.0);
    const int y0 = std::min(static_cast<int>(fy), std::max(src_h - 2, 0));
    const int y1 = src_h > 1 ? y0 + 1 : y0;
    const std::uint32_t wy =
        src_h > 1 ? static_cast<std::uint32_t>(std::lround((fy - y0) * 256)) : 0;
    if (have0 != y0) {
      if (have1 == y0) {
        std::swap(h0, h1);
        have0 = y0;
        have1 = -1;
      } else {
        horizontal(y0, h0);
        have0 = y0;
      }
    }
    if (have1 != y1) {
      horizontal(y1, h1);
      have1 = y1;
    }
    std::uint8_t* o = out + static_cast<std::size_t>(oy) * row_len;
    for (std::size_t i = 0; i < row_len; ++i)
      o[i] = static_cast<std::uint8_t>((h0[i] * (256 - wy) + h1[i] * wy + 32768) >> 16);
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

}  // namespace orch::imagedata
