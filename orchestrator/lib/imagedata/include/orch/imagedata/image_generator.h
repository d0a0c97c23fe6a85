// `orch dataset make`: an ImageNet-shaped JPEG folder, so tests, demos and benchmarks run
// without a copy of ImageNet. Photo-like content (a smooth gradient, soft blobs and hard-edged
// shapes, low-frequency shading and fine texture noise) so JPEG compresses it like a photo:
// files of ~110 KB at ~500x375, ImageNet's mean. Everything is a function of (seed, class,
// index): the same seed gives byte-identical files, whatever the number of threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "orch/imagedata/jpeg_codec.h"

namespace orch::imagedata {

struct GeneratorOptions {
  int classes = 10;
  int per_class = 100;
  std::uint64_t seed = 0;
  int quality = 90;  ///< JPEG quality, 1..100
  int workers = 0;   ///< 0: default_workers()
  /// Called with (files written, files in all) as files are written, by one thread at a time
  /// (a call that would wait for another is left out); may be empty.
  std::function<void(std::int64_t, std::int64_t)> progress;
};

struct GeneratorSummary {
  std::int64_t files = 0;
  std::uint64_t bytes = 0;
  double mean_width = 0, mean_height = 0;
};

/// The ImageNet-style folder name of class `c` (n01440764-like, increasing with c).
std::string class_folder_name(int c);

/// The dimensions of one image: mostly 500 wide and 333..375 high, a quarter portrait, some
/// other sizes between 200 and 640, like ImageNet's training set.
JpegSize generated_size(std::uint64_t seed, int cls, int index);

/// The pixels of one image.
RgbImage render_image(std::uint64_t seed, int cls, int index);

/// Writes DIR/train/<class>/<class>_<index>.JPEG. Throws DatasetError when DIR/train exists and
/// is not empty (nothing is overwritten) or a file cannot be written.
GeneratorSummary make_dataset(const std::filesystem::path& dir, const GeneratorOptions& options);

}  // namespace orch::imagedata
