#include "orch/imagedata/image_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "orch/imagedata/dataset_error.h"
#include "orch/imagedata/image_codec.h"
#include "orch/imagedata/image_folder.h"
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
    if (w <= 0) throw write_error(path.string(), "write failed", errno);
    data += w;
    n -= static_cast<std::size_t>(w);
    offset += static_cast<std::uint64_t>(w);
  }
}

}  // namespace

namespace {

// Where the tables end and the pixels begin for up to `count` images of `classes`.
struct Layout {
  std::uint64_t labels_offset = 0, pixels_offset = 0, stride = 0;
};

Layout layout_for(const std::vector<std::string>& classes, std::size_t count, int size) {
  std::uint64_t names = kHeaderBytes;
  for (const auto& name : classes) names += 4 + name.size();
  Layout l;
  l.labels_offset = (names + 7) / 8 * 8;
  l.pixels_offset = (l.labels_offset + 4 * static_cast<std::uint64_t>(count) + 4095) / 4096 * 4096;
  l.stride = static_cast<std::uint64_t>(size) * size * 3;
  return l;
}

// Images decoded at once, then written in order: enough for every worker to stay busy, and at
// most ~64 MB of pixels in memory whatever the image size.
std::int64_t chunk_images(int workers, std::uint64_t stride) {
  const auto by_memory = static_cast<std::int64_t>((64u << 20) / stride);
  return std::max<std::int64_t>(1, std::min<std::int64_t>(std::int64_t{workers} * 8, by_memory));
}

}  // namespace

CachePlan plan_image_cache(const fs::path& src, int size, const ScanOptions& scan,
                           const Subset& subset) {
  if (size < 8 || size > 4096) throw DatasetError("--size must be within 8..4096");
  CachePlan plan;
  plan.index = scan_image_folder(src, scan);
  apply_subset(plan.index, subset);
  plan.size = size;
  const Layout l = layout_for(plan.index.classes, plan.index.samples.size(), size);
  plan.file_bytes = l.pixels_offset + l.stride * plan.index.samples.size();
  return plan;
}

std::uint64_t free_bytes(const fs::path& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0)
    throw DatasetError(kReasonUnreadable,
                       dir.string() + ": cannot read the free space: " + std::strerror(errno));
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

void check_cache_destination(const fs::path& dst) {
  struct stat st {};
  if (::lstat(dst.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw DatasetError(dst.string() + ": cannot check the destination: " + std::strerror(errno));
  }
  const auto refuse = [&](const std::string& what) {
    throw DatasetError(dst.string() + ": " + what +
                       "; a cache replaces only an earlier orch image cache: choose another "
                       "destination or remove it");
  };
  if (S_ISLNK(st.st_mode)) refuse("is a symbolic link, and orch does not write through links");
  if (!S_ISREG(st.st_mode)) refuse("is not a regular file");
  char magic[8] = {};
  Fd in;
  in.fd = ::open(dst.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (in.fd < 0 || ::pread(in.fd, magic, sizeof magic, 0) != static_cast<ssize_t>(sizeof magic) ||
      std::memcmp(magic, kCacheMagic, sizeof magic) != 0) {
    refuse("exists and is not an orch image cache");
  }
}

namespace {

// Opens `tmp` new, never through a link planted at the name; a regular file an interrupted
// cache left there is ours to replace.
void create_partial(Fd& out, const fs::path& tmp) {
  const int create = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  out.fd = ::open(tmp.c_str(), create, 0644);
  if (out.fd < 0 && errno == EEXIST) {
    struct stat st {};
    if (::lstat(tmp.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::unlink(tmp.c_str()) == 0) {
      out.fd = ::open(tmp.c_str(), create, 0644);
    } else {
      throw DatasetError(tmp.string() + ": is in the way and not a file orch left; remove it");
    }
  }
  if (out.fd < 0) throw write_error(tmp.string(), "cannot create", errno);
}

// Decodes the plan's images first .. first + n - 1 in parallel, image k into `pixels` at
// k * stride, or its error into failed[k]; the caller writes them in the plan's order, so the
// file is the same whatever the threads did.
void decode_chunk(const FolderIndex& index, int size, std::uint64_t stride, int workers,
                  std::int64_t first, std::int64_t n, std::vector<std::uint8_t>& pixels,
                  std::vector<std::optional<DatasetError>>& failed) {
  parallel_for(n, workers, [&](std::int64_t k) {
    const FolderSample& s = index.samples[static_cast<std::size_t>(first + k)];
    failed[static_cast<std::size_t>(k)].reset();
    try {
      const std::vector<std::uint8_t> data = read_file(s.path);
      const JpegSize js = read_image_size(data.data(), data.size());
      const DecodedRegion r = decode_image_region(data.data(), data.size(),
                                                  center_square(js.width, js.height), size, size);
      resample_bilinear(r.image, r.crop, size, size, false,
                        pixels.data() + static_cast<std::size_t>(k) * stride);
    } catch (const DatasetError& e) {
      failed[static_cast<std::size_t>(k)] = with_path(s.path.string(), e);
    }
  });
}

// Decodes and writes every image's pixels, chunk by chunk, after the tables' room; returns the
// labels of the images written, in file order. Skipped images go to summary.skipped.
std::vector<std::int32_t> write_pixels(const CachePlan& plan, const CacheWriteOptions& o,
                                       int workers, const Layout& l, int fd, const fs::path& tmp,
                                       CacheWriteSummary& summary) {
  const FolderIndex& index = plan.index;
  const std::int64_t total = static_cast<std::int64_t>(index.samples.size());
  const std::int64_t chunk = chunk_images(workers, l.stride);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(chunk * l.stride));
  std::vector<std::optional<DatasetError>> failed(static_cast<std::size_t>(chunk));
  std::vector<std::int32_t> labels;
  for (std::int64_t first = 0; first < total; first += chunk) {
    const std::int64_t n = std::min(chunk, total - first);
    decode_chunk(index, plan.size, l.stride, workers, first, n, pixels, failed);
    for (std::int64_t k = 0; k < n; ++k) {
      const FolderSample& s = index.samples[static_cast<std::size_t>(first + k)];
      if (const auto& e = failed[static_cast<std::size_t>(k)]) {
        // The first bad file in the plan's order, whichever thread met its own first: the
        // same error on every run of the same command.
        if (!o.skip_errors) throw *e;
        summary.skipped.push_back({s.path, e->reason(), e->what()});
        continue;
      }
      write_all(fd, pixels.data() + static_cast<std::size_t>(k) * l.stride, l.stride,
                l.pixels_offset + l.stride * static_cast<std::uint64_t>(labels.size()), tmp);
      labels.push_back(s.label);
    }
    if (o.progress)
      o.progress({first + n, total, static_cast<std::int64_t>(summary.skipped.size())});
  }
  return labels;
}

// The header (all but its magic) and the tables: class names, then one label per image.
std::vector<std::uint8_t> cache_head(const std::vector<std::string>& classes,
                                     const std::vector<std::int32_t>& labels, const Layout& l,
                                     int size, std::uint64_t file_size) {
  std::vector<std::uint8_t> head(l.labels_offset + labels.size() * 4);
  std::size_t at = kHeaderBytes;
  for (const auto& name : classes) {
    put<std::uint32_t>(head, at, static_cast<std::uint32_t>(name.size()));
    std::memcpy(head.data() + at + 4, name.data(), name.size());
    at += 4 + name.size();
  }
  for (std::size_t i = 0; i < labels.size(); ++i)
    put<std::int32_t>(head, l.labels_offset + i * 4, labels[i]);
  put<std::uint32_t>(head, 8, kCacheVersion);
  put<std::uint32_t>(head, 12, static_cast<std::uint32_t>(size));
  put<std::uint32_t>(head, 16, 3);
  put<std::uint32_t>(head, 20, static_cast<std::uint32_t>(classes.size()));
  put<std::uint64_t>(head, 24, static_cast<std::uint64_t>(labels.size()));
  put<std::uint64_t>(head, 32, l.labels_offset);
  put<std::uint64_t>(head, 40, l.pixels_offset);
  put<std::uint64_t>(head, 48, file_size);
  return head;
}

// Sizes the file and writes `head` (from byte 8) and then the magic, each flushed before the
// next: until the magic is written the file is no cache. Closes `out`.
void finish_cache_file(Fd& out, const std::vector<std::uint8_t>& head, std::uint64_t file_size,
                       const fs::path& tmp) {
  if (::ftruncate(out.fd, static_cast<off_t>(file_size)) != 0)
    throw write_error(tmp.string(), "cannot size the file", errno);
  write_all(out.fd, head.data() + 8, head.size() - 8, 8, tmp);
  if (::fdatasync(out.fd) != 0) throw write_error(tmp.string(), "cannot flush", errno);
  write_all(out.fd, reinterpret_cast<const std::uint8_t*>(kCacheMagic), 8, 0, tmp);
  if (::fdatasync(out.fd) != 0 || ::close(out.fd) != 0) {
    out.fd = -1;
    throw write_error(tmp.string(), "cannot flush", errno);
  }
  out.fd = -1;
}

}  // namespace

CacheWriteSummary write_image_cache(const CachePlan& plan, const fs::path& dst,
                                    const CacheWriteOptions& o) {
  check_cache_destination(dst);
  const Layout l = layout_for(plan.index.classes, plan.index.samples.size(), plan.size);
  const int workers = o.workers > 0 ? o.workers : default_workers();

  CacheWriteSummary summary;
  summary.skipped = plan.index.skipped;
  const fs::path tmp = dst.string() + ".partial";
  Fd out;
  create_partial(out, tmp);
  try {
    const std::vector<std::int32_t> labels =
        write_pixels(plan, o, workers, l, out.fd, tmp, summary);
    const auto written = static_cast<std::int64_t>(labels.size());
    if (written == 0)
      throw DatasetError(summary.skipped.empty()
                             ? std::string("no images to cache")
                             : "no image could be decoded; the first: " +
                                   std::string(summary.skipped.front().message));
    const std::uint64_t file_size =
        l.pixels_offset + l.stride * static_cast<std::uint64_t>(written);
    finish_cache_file(out, cache_head(plan.index.classes, labels, l, plan.size, file_size),
                      file_size, tmp);
    summary.images = written;
    summary.file_bytes = file_size;
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::rename(tmp, dst, ec);
  if (ec) throw write_error(dst.string(), "cannot rename the finished cache", ec.value());
  return summary;
}

CacheWriteSummary write_image_cache(const fs::path& src, const fs::path& dst, int size,
                                    int workers) {
  CacheWriteOptions o;
  o.workers = workers;
  return write_image_cache(plan_image_cache(src, size), dst, o);
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
