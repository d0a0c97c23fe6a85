// Helpers for the dataset unit tests: temporary folders and small generated JPEG folders.
#pragma once

#include <orch/imagedata/image_generator.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace orch::imagedata::test {

class ScratchDir {
 public:
  ScratchDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("orch-dataset-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::vector<std::uint8_t> slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void spit(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

/// Mean absolute difference of two equally sized byte buffers.
inline double mean_abs_diff(const std::uint8_t* a, const std::uint8_t* b, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i)
    sum += std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i]));
  return sum / static_cast<double>(n);
}

/// The reference resize: every output pixel the mean of the full-resolution pixels it covers
/// (what an antialiased resize does), out_size x out_size RGB.
inline std::vector<std::uint8_t> area_resize(const RgbImage& full, const CropBox& box,
                                             int out_size) {
  std::vector<std::uint8_t> ref(static_cast<std::size_t>(out_size) * out_size * 3);
  for (int oy = 0; oy < out_size; ++oy)
    for (int ox = 0; ox < out_size; ++ox) {
      const int xa = box.x + static_cast<int>(ox * static_cast<double>(box.w) / out_size);
      const int ya = box.y + static_cast<int>(oy * static_cast<double>(box.h) / out_size);
      const int xb = std::max(
          xa + 1, box.x + static_cast<int>((ox + 1) * static_cast<double>(box.w) / out_size));
      const int yb = std::max(
          ya + 1, box.y + static_cast<int>((oy + 1) * static_cast<double>(box.h) / out_size));
      for (int c = 0; c < 3; ++c) {
        double sum = 0;
        for (int y = ya; y < yb; ++y)
          for (int x = xa; x < xb; ++x)
            sum += full.pixels[(static_cast<std::size_t>(y) * full.width + x) * 3 + c];
        ref[(static_cast<std::size_t>(oy) * out_size + ox) * 3 + c] =
            static_cast<std::uint8_t>(std::lround(sum / ((xb - xa) * (yb - ya))));
      }
    }
  return ref;
}

}  // namespace orch::imagedata::test
