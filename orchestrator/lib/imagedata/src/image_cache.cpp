#include "orch/imagedata/image_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "orch/imagedata/dataset_error.h"
#include "orch/imagedata/image_folder.h"
#include "orch/imagedata/jpeg_codec.h"
#include "orch/imagedata/parallel.h"
#include "orch/imagedata/resample.h"

namespace orch::imagedata {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kHeaderBytes = 56;

template <class T>
void put(std::vector<std::uint8_t>& buf, std::size_t at, T v) {
  std::memcpy(buf.data() + at, &v, sizeof v);
}
template <class T>
T get(const std::uint8_t* p, std::size_t at) {
  T v;
  std::memcpy(&v, p + at, sizeof v);
  return v;
}

// An open file descriptor, closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(int fd, const std::uint8_t* data, std::size_t n, std::uint64_t offset,
               const fs::path& path) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (w <= 0) throw DatasetError(path.string() + ": write failed: " + std::strerror(errno));
    data += w;
    n -= static_cast<std::size_t>(w);
    offset += static_cast<std::uint64_t>(w);
  }
}

}  // namespace

CacheWriteSummary write_image_cache(const fs::path& src, const fs::path& dst, int size,
                                    int workers) {
  if (size < 8 || size > 4096) throw DatasetError("--size must be within 8..4096");
  const FolderIndex index = scan_image_folder(src);
  const std::int64_t count = static_cast<std::int64_t>(index.samples.size());
  // Header and tables first, in memory.
  std::vector<std::uint8_t> head(kHeaderBytes);
  for (const auto& name : index.classes) {
    const std::size_t at = head.size();
    head.resize(at + 4 + name.size());
    put<std::uint32_t>(head, at, static_cast<std::uint32_t>(name.size()));
    std::memcpy(head.data() + at + 4, name.data(), name.size());
  }
  const std::uint64_t labels_offset = (head.size() + 7) / 8 * 8;
  head.resize(labels_offset + static_cast<std::size_t>(count) * 4);
  for (std::int64_t i = 0; i < count; ++i)
    put<std::int32_t>(head, labels_offset + static_cast<std::size_t>(i) * 4,
                      index.samples[static_cast<std::size_t>(i)].label);
  const std::uint64_t pixels_offset = (head.size() + 4095) / 4096 * 4096;
  const std::uint64_t stride = static_cast<std::uint64_t>(size) * size * 3;
  const std::uint64_t file_size = pixels_offset + stride * static_cast<std::uint64_t>(count);
  std::memcpy(head.data(), kCacheMagic, 8);
  put<std::uint32_t>(head, 8, kCacheVersion);
  put<std::uint32_t>(head, 12, static_cast<std::uint32_t>(size));
  put<std::uint32_t>(head, 16, 3);
  put<std::uint32_t>(head, 20, static_cast<std::uint32_t>(index.classes.size()));
  put<std::uint64_t>(head, 24, static_cast<std::uint64_t>(count));
  put<std::uint64_t>(head, 32, labels_offset);
  put<std::uint64_t>(head, 40, pixels_offset);
  put<std::uint64_t>(head, 48, file_size);

  const fs::path tmp = dst.string() + ".partial";
  Fd out;
  out.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out.fd < 0) throw DatasetError(tmp.string() + ": cannot create: " + std::strerror(errno));
  try {
    if (::ftruncate(out.fd, static_cast<off_t>(file_size)) != 0)
      throw DatasetError(tmp.string() + ": cannot size the file: " + std::strerror(errno));
    write_all(out.fd, head.data(), head.size(), 0, tmp);
    parallel_for(count, workers > 0 ? workers : default_workers(), [&](std::int64_t i) {
      const FolderSample& s = index.samples[static_cast<std::size_t>(i)];
      std::vector<std::uint8_t> pixels(stride);
      try {
        const std::vector<std::uint8_t> jpeg = read_file(s.path);
        const JpegSize js = read_jpeg_size(jpeg.data(), jpeg.size());
        const DecodedRegion r = decode_jpeg_region(jpeg.data(), jpeg.size(),
                                                   center_square(js.width, js.height), size, size);
        resample_bilinear(r.image, r.crop, size, size, false, pixels.data());
      } catch (const DatasetError& e) {
        const std::string what = e.what();
        if (what.rfind(s.path.string(), 0) == 0) throw;
        throw DatasetError(s.path.string() + ": " + what);
      }
      write_all(out.fd, pixels.data(), pixels.size(),
                pixels_offset + stride * static_cast<std::uint64_t>(i), tmp);
    });
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  ::close(out.fd);
  out.fd = -1;
  std::error_code ec;
  fs::rename(tmp, dst, ec);
  if (ec) throw DatasetError(dst.string() + ": cannot rename the finished cache: " + ec.message());
  return {count, file_size};
}

ImageCache::ImageCache(const fs::path& path) {
  Fd in;
  in.fd = ::open(path.c_str(), O_RDONLY);
  if (in.fd < 0) throw DatasetError(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) throw DatasetError(path.string() + ": cannot stat");
  const auto actual = static_cast<std::uint64_t>(st.st_size);
  if (actual < kHeaderBytes)
    throw DatasetError(path.string() + ": not an orch image cache (too short)");
  map_size_ = static_cast<std::size_t>(actual);
  map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_SHARED, in.fd, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw DatasetError(path.string() + ": mmap failed: " + std::strerror(errno));
  }
  try {
    const auto* p = static_cast<const std::uint8_t*>(map_);
    if (std::memcmp(p, kCacheMagic, 8) != 0)
      throw DatasetError(path.string() + ": not an orch image cache (bad magic)");
    const auto version = get<std::uint32_t>(p, 8);
    if (version != kCacheVersion)
      throw DatasetError(fmt::format(
          "{}: image cache format version {} is not supported (this orch reads version {}); "
          "rebuild it with `orch dataset cache`",
          path.string(), version, kCacheVersion));
    image_size_ = static_cast<int>(get<std::uint32_t>(p, 12));
    const auto channels = get<std::uint32_t>(p, 16);
    const auto classes = get<std::uint32_t>(p, 20);
    count_ = static_cast<std::int64_t>(get<std::uint64_t>(p, 24));
    const auto labels_offset = get<std::uint64_t>(p, 32);
    const auto pixels_offset = get<std::uint64_t>(p, 40);
    const auto file_size = get<std::uint64_t>(p, 48);
    const std::uint64_t stride = static_cast<std::uint64_t>(image_size_) * image_size_ * 3;
    if (channels != 3 || image_size_ < 1 || count_ < 1 || classes < 1 ||
        labels_offset + 4 * static_cast<std::uint64_t>(count_) > pixels_offset ||
        pixels_offset + stride * static_cast<std::uint64_t>(count_) != file_size)
      throw DatasetError(path.string() + ": corrupt image cache header");
    if (file_size != actual)
      throw DatasetError(fmt::format("{}: truncated image cache ({} bytes, the header says {})",
                                     path.string(), actual, file_size));
    std::size_t at = kHeaderBytes;
    for (std::uint32_t c = 0; c < classes; ++c) {
      if (at + 4 > labels_offset)
        throw DatasetError(path.string() + ": corrupt image cache class table");
      const auto len = get<std::uint32_t>(p, at);
      if (at + 4 + len > labels_offset)
        throw DatasetError(path.string() + ": corrupt image cache class table");
      classes_.emplace_back(reinterpret_cast<const char*>(p + at + 4), len);
      at += 4 + len;
    }
    labels_ = reinterpret_cast<const std::int32_t*>(p + labels_offset);
    pixels_ = p + pixels_offset;
    for (std::int64_t i = 0; i < count_; ++i)
      if (labels_[i] < 0 || static_cast<std::uint32_t>(labels_[i]) >= classes)
        throw DatasetError(path.string() + ": corrupt image cache label table");
  } catch (...) {
    ::munmap(map_, map_size_);
    map_ = nullptr;
    throw;
  }
}

ImageCache::~ImageCache() {
  if (map_) ::munmap(map_, map_size_);
}

}  // namespace orch::imagedata
