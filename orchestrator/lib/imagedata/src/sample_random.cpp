#include "orch/imagedata/sample_random.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace orch::imagedata {
namespace {

std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

SampleRng SampleRng::for_sample(std::uint64_t seed, std::uint64_t epoch, std::uint64_t index) {
  std::uint64_t s = mix64(seed + 0x9e3779b97f4a7c15ULL);
  s = mix64(s ^ (epoch * 0xd1b54a32d192ed03ULL + 0x632be59bd9b4e019ULL));
  s = mix64(s ^ (index * 0x8cb92ba72f3d8dd7ULL + 0x2545f4914f6cdd1dULL));
  return SampleRng(s);
}

std::uint64_t SampleRng::next() {
  state_ += 0x9e3779b97f4a7c15ULL;
  return mix64(state_);
}

double SampleRng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::uint64_t SampleRng::below(std::uint64_t bound) {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
}

std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::uint64_t epoch,
                                      bool shuffle) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle) return order;
  SampleRng rng = SampleRng::for_sample(seed, epoch, ~0ULL);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

CropBox random_resized_crop(int width, int height, SampleRng& rng, const CropParams& p) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(p.ratio_min), log_hi = std::log(p.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(p.scale_min, p.scale_max);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int w = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const int x = static_cast<int>(rng.below(static_cast<std::uint64_t>(width - w + 1)));
      const int y = static_cast<int>(rng.below(static_cast<std::uint64_t>(height - h + 1)));
      return {x, y, w, h};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < p.ratio_min) {
    h = static_cast<int>(std::lround(w / p.ratio_min));
  } else if (in_ratio > p.ratio_max) {
    w = static_cast<int>(std::lround(h * p.ratio_max));
  }
  w = std::clamp(w, 1, width);
  h = std::clamp(h, 1, height);
  return {(width - w) / 2, (height - h) / 2, w, h};
}

CropBox center_square(int width, int height) {
  const int s = std::min(width, height);
  return {(width - s) / 2, (height - s) / 2, s, s};
}

}  // namespace orch::imagedata
