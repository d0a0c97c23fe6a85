// Randomness that does not depend on thread timing: every sample's random numbers come from
// (seed, epoch, index) alone, epoch orders from (seed, epoch). A small, specified generator
// (SplitMix64) rather than <random>'s distributions, whose output differs between libraries.
#pragma once

#include <cstdint>
#include <vector>

namespace orch::imagedata {

class SampleRng {
 public:
  explicit SampleRng(std::uint64_t state) : state_(state) {}
  /// The generator of one sample (or, with index = ~0, of the epoch's order).
  static SampleRng for_sample(std::uint64_t seed, std::uint64_t epoch, std::uint64_t index);
  std::uint64_t next();
  /// Uniform in [0, 1).
  double uniform();
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, bound); bound > 0.
  std::uint64_t below(std::uint64_t bound);

 private:
  std::uint64_t state_;
};

/// The order of an epoch's n samples: 0..n-1, or a Fisher-Yates shuffle from (seed, epoch).
std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::uint64_t epoch,
                                      bool shuffle);

/// A crop rectangle in source pixels.
struct CropBox {
  int x = 0, y = 0, w = 0, h = 0;
};

struct CropParams {
  double scale_min = 0.08, scale_max = 1.0;             ///< fraction of the image area
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;  ///< width / height
};

/// torchvision's RandomResizedCrop.get_params: ten tries at a random area and log-uniform
/// aspect ratio that fit, else a center crop clamped to the ratio range.
CropBox random_resized_crop(int width, int height, SampleRng& rng, const CropParams& p = {});

/// The centered square of side min(width, height): what the cache stores.
CropBox center_square(int width, int height);

}  // namespace orch::imagedata
