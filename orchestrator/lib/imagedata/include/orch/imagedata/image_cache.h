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
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "orch/imagedata/image_folder.h"

namespace orch::imagedata {

constexpr char kCacheMagic[8] = {'O', 'R', 'C', 'H', 'I', 'M', 'G', 'C'};
constexpr std::uint32_t kCacheVersion = 1;

struct CacheWriteSummary {
  std::int64_t images = 0;
  std::uint64_t file_bytes = 0;
  std::vector<SkippedEntry> skipped;  ///< with skip_errors: the files left out, and why
};

/// What a cache of a folder will hold, known before anything is decoded.
struct CachePlan {
  FolderIndex index;  ///< the images to decode (after the subset)
  int size = 256;
  std::uint64_t file_bytes = 0;  ///< the file's size when every image decodes (at most this)
};

/// Scans `src` (scan_image_folder with `scan`), keeps `subset` and sizes the file.
CachePlan plan_image_cache(const std::filesystem::path& src, int size, const ScanOptions& scan = {},
                           const Subset& subset = {});

/// Bytes an unprivileged process may still write on the file system holding `dir` (statvfs's
/// f_bavail * f_frsize); throws DatasetError when it cannot be read.
std::uint64_t free_bytes(const std::filesystem::path& dir);

struct CacheProgress {
  std::int64_t done = 0, total = 0;  ///< images examined of the plan's
  std::int64_t skipped = 0;
};

struct CacheWriteOptions {
  int workers = 0;  ///< 0: default_workers()
  /// A file that cannot be decoded is left out (listed in CacheWriteSummary::skipped) instead of
  /// failing the cache.
  bool skip_errors = false;
  /// Called from the calling thread after every chunk of images, in order.
  std::function<void(const CacheProgress&)> progress;
};

/// Throws DatasetError unless `dst` may receive a cache: absent, or a regular file that is an
/// earlier orch image cache (its magic). A link, a FIFO, a device or any other file (a results
/// database, an experiment file) is refused: a cache replaces only a cache. Cheap; call it
/// before the scan and the decoding, which can take hours.
void check_cache_destination(const std::filesystem::path& dst);

/// Decodes the plan's images into the cache file `dst` (check_cache_destination first). Written as
/// `dst.partial` and renamed at the end; the header goes in last, so a file left by an interrupted
/// cache has no magic and is refused by ImageCache whatever its name; `dst.partial` is created new,
/// never through a link (one left by a crash is removed first). A file that cannot be decoded fails
/// the cache with `path: what is wrong` (nothing left behind), or with skip_errors is left out.
CacheWriteSummary write_image_cache(const CachePlan& plan, const std::filesystem::path& dst,
                                    const CacheWriteOptions& options);

/// The whole folder at `src`, every file required to decode.
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
