// The pre-decoded image cache (`orch dataset cache`, read by the `cached` loader): one file with
// a header, the class names, one label per image, and every image as size x size RGB uint8
// (the JPEG's shorter side resized to `size`, then the centre square), at a fixed stride, so
// image i is at pixels_offset + i * size * size * 3 and the file is read memory-mapped.
//
// Layout, little-endian:
//   0   char[8]  magic "ORCHIMGC"
//   8   u32      version (kCacheVersion)
//   12  u32      image size (pixels per side)
//   16  u32      channels (3)
//   20  u32      number of classes
//   24  u64      number of images
//   32  u64      labels offset (i32 per image)
//   40  u64      pixels offset (4096-aligned)
//   48  u64      file size
//   56  ...      class names, each u32 length + bytes
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace orch::imagedata {

constexpr char kCacheMagic[8] = {'O', 'R', 'C', 'H', 'I', 'M', 'G', 'C'};
constexpr std::uint32_t kCacheVersion = 1;

struct CacheWriteSummary {
  std::int64_t images = 0;
  std::uint64_t file_bytes = 0;
};

/// Decodes every JPEG of the folder at `src` (as scan_image_folder finds it) into the cache file
/// `dst`, written under a temporary name and renamed at the end. A corrupt file fails the whole
/// cache with `path: what is wrong`.
CacheWriteSummary write_image_cache(const std::filesystem::path& src,
                                    const std::filesystem::path& dst, int size, int workers = 0);

/// A cache file, memory-mapped read-only. Refuses other magics, versions and truncated files.
class ImageCache {
 public:
  explicit ImageCache(const std::filesystem::path& path);
  ~ImageCache();
  ImageCache(const ImageCache&) = delete;
  ImageCache& operator=(const ImageCache&) = delete;

  std::int64_t size() const { return count_; }
  int image_size() const { return image_size_; }
  const std::vector<std::string>& classes() const { return classes_; }
  std::int32_t label(std::int64_t i) const { return labels_[i]; }
  /// image_size x image_size x 3 bytes.
  const std::uint8_t* pixels(std::int64_t i) const {
    return pixels_ + static_cast<std::size_t>(i) * image_size_ * image_size_ * 3;
  }

 private:
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  std::int64_t count_ = 0;
  int image_size_ = 0;
  std::vector<std::string> classes_;
  const std::int32_t* labels_ = nullptr;
  const std::uint8_t* pixels_ = nullptr;
};

}  // namespace orch::imagedata
