#include "orch/imagedata/image_generator.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <vector>

#include "orch/imagedata/dataset_error.h"
#include "orch/imagedata/parallel.h"
#include "orch/imagedata/sample_random.h"

namespace orch::imagedata {
namespace fs = std::filesystem;
namespace {

struct Rgb {
  float r, g, b;
};

Rgb random_color(SampleRng& rng) {
  return {static_cast<float>(rng.uniform(20, 235)), static_cast<float>(rng.uniform(20, 235)),
          static_cast<float>(rng.uniform(20, 235))};
}

// A lattice of random values, bilinearly interpolated: smooth shading (large cells) or texture
// (small cells). Values in [-1, 1].
class ValueNoise {
 public:
  ValueNoise(SampleRng& rng, int width, int height, int cell)
      : cell_(cell),
        gw_(width / cell + 2),
        gh_(height / cell + 2),
        grid_(static_cast<std::size_t>(gw_) * gh_) {
    for (auto& v : grid_) v = static_cast<float>(rng.uniform(-1, 1));
  }
  float at(int x, int y) const {
    const int gx = x / cell_, gy = y / cell_;
    const float fx = static_cast<float>(x % cell_) / cell_,
                fy = static_cast<float>(y % cell_) / cell_;
    const float* r0 = &grid_[static_cast<std::size_t>(gy) * gw_ + gx];
    const float* r1 = r0 + gw_;
    const float top = r0[0] + (r0[1] - r0[0]) * fx, bottom = r1[0] + (r1[1] - r1[0]) * fx;
    return top + (bottom - top) * fy;
  }

 private:
  int cell_, gw_, gh_;
  std::vector<float> grid_;
};

}  // namespace

std::string class_folder_name(int c) { return fmt::format("n{:08d}", 1440764 + c * 7919); }

JpegSize generated_size(std::uint64_t seed, int cls, int index) {
  SampleRng rng = SampleRng::for_sample(seed ^ 0x5157a7e5ULL, static_cast<std::uint64_t>(cls),
                                        static_cast<std::uint64_t>(index));
  const double pick = rng.uniform();
  int long_side = 500, short_side = 375;
  if (pick < 0.45) {
    short_side = 375;
  } else if (pick < 0.7) {
    short_side = 333;
  } else if (pick < 0.85) {
    short_side = static_cast<int>(rng.uniform(280, 500));
  } else {
    long_side = static_cast<int>(rng.uniform(200, 640));
    short_side = static_cast<int>(long_side * rng.uniform(0.56, 1.0));
  }
  const bool portrait = rng.uniform() < 0.25;
  return portrait ? JpegSize{short_side, long_side} : JpegSize{long_side, short_side};
}

namespace {

// A palette colour moved a little, so images of a class share colours without repeating them.
Rgb jitter(Rgb c, SampleRng& rng) {
  return Rgb{c.r + static_cast<float>(rng.uniform(-30, 30)),
             c.g + static_cast<float>(rng.uniform(-30, 30)),
             c.b + static_cast<float>(rng.uniform(-30, 30))};
}

// Background: a linear gradient from `a` to `b` with low-frequency shading, over all of `img`.
void paint_background(std::vector<float>& img, int w, int h, Rgb a, Rgb b, SampleRng& rng) {
  const double angle = rng.uniform(0, 6.283185307);
  const float gx = static_cast<float>(std::cos(angle) / w),
              gy = static_cast<float>(std::sin(angle) / h);
  ValueNoise shade(rng, w, h, 48 + static_cast<int>(rng.below(48)));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const float t = std::clamp(0.5f + (x - w / 2) * gx + (y - h / 2) * gy, 0.0f, 1.0f);
      const float s = 28.0f * shade.at(x, y);
      float* p = &img[(static_cast<std::size_t>(y) * w + x) * 3];
      p[0] = a.r + (b.r - a.r) * t + s;
      p[1] = a.g + (b.g - a.g) * t + s;
      p[2] = a.b + (b.b - a.b) * t + s;
    }
}

// One object of colour `c`: a soft blob, a hard-edged ellipse or a rectangle, blended over
// its bounding box only.
void paint_shape(std::vector<float>& img, int w, int h, Rgb c, SampleRng& rng) {
  const float cx = static_cast<float>(rng.uniform(0, w)),
              cy = static_cast<float>(rng.uniform(0, h));
  const float rx = static_cast<float>(rng.uniform(0.04, 0.3) * w);
  const float ry = static_cast<float>(rng.uniform(0.04, 0.3) * h);
  const int kind = static_cast<int>(rng.below(3));  // 0 soft blob, 1 ellipse, 2 rectangle
  const float alpha = static_cast<float>(rng.uniform(0.5, 1.0));
  const int x0 = std::max(0, static_cast<int>(cx - rx)),
            x1 = std::min(w, static_cast<int>(cx + rx) + 1);
  const int y0 = std::max(0, static_cast<int>(cy - ry)),
            y1 = std::min(h, static_cast<int>(cy + ry) + 1);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      const float dx = (x - cx) / rx, dy = (y - cy) / ry, d2 = dx * dx + dy * dy;
      float m = 0;
      if (kind == 0)
        m = d2 < 1 ? (1 - d2) * (1 - d2) : 0;
      else if (kind == 1)
        m = d2 < 1 ? 1.0f : 0.0f;
      else
        m = 1.0f;
      m *= alpha;
      if (m <= 0) continue;
      float* p = &img[(static_cast<std::size_t>(y) * w + x) * 3];
      p[0] += (c.r - p[0]) * m;
      p[1] += (c.g - p[1]) * m;
      p[2] += (c.b - p[2]) * m;
    }
}

// Texture: mid-frequency noise (surfaces) and per-pixel grain (sensor noise), which is what
// makes JPEG spend bytes the way it does on photos. Rounds `img` to 8-bit pixels.
RgbImage finish_pixels(const std::vector<float>& img, int w, int h, SampleRng& rng) {
  ValueNoise texture(rng, w, h, 3);
  const float texture_amp = static_cast<float>(rng.uniform(22, 36));
  const float grain_amp = static_cast<float>(rng.uniform(32, 50));
  RgbImage out;
  out.width = w;
  out.height = h;
  out.pixels.resize(img.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const float t = texture_amp * texture.at(x, y);
      const std::size_t i = (static_cast<std::size_t>(y) * w + x) * 3;
      for (int c = 0; c < 3; ++c) {
        const float grain = grain_amp *
                            static_cast<float>(static_cast<std::int64_t>(rng.below(2001)) - 1000) /
                            1000.0f;
        out.pixels[i + c] =
            static_cast<std::uint8_t>(std::clamp(img[i + c] + t + grain, 0.0f, 255.0f) + 0.5f);
      }
    }
  return out;
}

}  // namespace

RgbImage render_image(std::uint64_t seed, int cls, int index) {
  const JpegSize size = generated_size(seed, cls, index);
  const int w = size.width, h = size.height;
  // The class picks a palette; the image varies it.
  SampleRng class_rng =
      SampleRng::for_sample(seed ^ 0xc1a55ULL, static_cast<std::uint64_t>(cls), 0);
  const Rgb base_a = random_color(class_rng), base_b = random_color(class_rng);
  SampleRng rng = SampleRng::for_sample(seed, static_cast<std::uint64_t>(cls),
                                        static_cast<std::uint64_t>(index));
  const Rgb a = jitter(base_a, rng), b = jitter(base_b, rng);
  std::vector<float> img(static_cast<std::size_t>(w) * h * 3);
  paint_background(img, w, h, a, b, rng);
  const int shapes = 6 + static_cast<int>(rng.below(9));
  for (int k = 0; k < shapes; ++k)
    paint_shape(img, w, h, k % 2 ? jitter(base_a, rng) : random_color(rng), rng);
  return finish_pixels(img, w, h, rng);
}

namespace {

// What one `dataset make` created, removed again when it fails (a full disk, a folder in the
// way): exit 4 says "fix it and run the same command again", and the same command refuses a
// DIR/train that is not empty, so nothing of a failed make may stay behind. Only what this
// invocation made is removed: files it created exclusively, then folders it made, emptied.
class CreatedPaths {
 public:
  void folder(const fs::path& p) { folders_.push_back(p); }
  void file(const fs::path& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    files_.push_back(p);
  }
  void remove() {
    for (const auto& f : files_) ::unlink(f.c_str());
    for (auto it = folders_.rbegin(); it != folders_.rend(); ++it) ::rmdir(it->c_str());
  }

 private:
  std::mutex mutex_;
  std::vector<fs::path> files_, folders_;
};

// DIR and those of its parents that are missing, made as `mkdir -p` would, each recorded.
void make_dir(const fs::path& dir, CreatedPaths& created) {
  fs::path p = dir.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "data/" is "data"
  std::vector<fs::path> missing;
  for (; !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0) break;
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0755) == 0) {
      created.folder(*it);
    } else if (const int err = errno; err != EEXIST) {
      throw write_error(it->string(), "cannot create", err);
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw write_error(dir.string(), "cannot create", ENOTDIR);
}

// DIR (made when missing), DIR/train and its class folders, each a real folder: a symbolic
// link planted at DIR/train or at a class's name would aim the dataset's files at its target.
void make_own_folders(const fs::path& dir, const fs::path& train, int classes,
                      CreatedPaths& created) {
  make_dir(dir, created);
  const auto own_folder = [&created](const fs::path& p, bool may_exist) {
    if (::mkdir(p.c_str(), 0755) == 0) {
      created.folder(p);
      return;
    }
    const int err = errno;
    struct stat st {};
    if (err != EEXIST || ::lstat(p.c_str(), &st) != 0)
      throw write_error(p.string(), "cannot create", err);
    if (S_ISLNK(st.st_mode))
      throw DatasetError(p.string() +
                         ": is a symbolic link, and orch does not write through links; remove it "
                         "or choose another DIR");
    if (!S_ISDIR(st.st_mode)) throw DatasetError(p.string() + ": is in the way and not a folder");
    if (!may_exist) throw DatasetError(p.string() + ": already exists (nothing is overwritten)");
  };
  own_folder(train, /*may_exist=*/true);
  std::error_code ec;
  if (!fs::is_empty(train, ec) || ec)
    throw DatasetError(train.string() +
                       ": already exists and is not empty (nothing is overwritten)");
  for (int c = 0; c < classes; ++c) own_folder(train / class_folder_name(c), false);
}

// A new file, created exclusively and never through a link planted at its name; recorded as
// soon as it exists, so a failed write's partial file is removed with the rest.
void write_new_file(const fs::path& path, const std::vector<std::uint8_t>& bytes,
                    CreatedPaths& created) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw write_error(path.string(), "cannot create", errno);
  created.file(path);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      throw write_error(path.string(), "write failed", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw write_error(path.string(), "write failed", errno);
}

}  // namespace

GeneratorSummary make_dataset(const fs::path& dir, const GeneratorOptions& o) {
  if (o.classes < 1 || o.per_class < 1)
    throw DatasetError("--classes and --per-class must be at least 1");
  if (o.quality < 1 || o.quality > 100) throw DatasetError("--quality must be within 1..100");
  const fs::path train = dir / "train";
  CreatedPaths created;
  std::atomic<std::uint64_t> bytes{0}, widths{0}, heights{0};
  std::atomic<std::int64_t> done{0};
  std::mutex progress_mutex;
  const std::int64_t n = static_cast<std::int64_t>(o.classes) * o.per_class;
  try {
    make_own_folders(dir, train, o.classes, created);
    parallel_for(n, o.workers > 0 ? o.workers : default_workers(), [&](std::int64_t i) {
      const int c = static_cast<int>(i / o.per_class), k = static_cast<int>(i % o.per_class);
      const RgbImage image = render_image(o.seed, c, k);
      const std::vector<std::uint8_t> jpeg = encode_jpeg(image, o.quality);
      const std::string name = class_folder_name(c);
      const fs::path path = train / name / fmt::format("{}_{}.JPEG", name, k);
      write_new_file(path, jpeg, created);
      bytes += jpeg.size();
      widths += static_cast<std::uint64_t>(image.width);
      heights += static_cast<std::uint64_t>(image.height);
      const std::int64_t finished = ++done;
      if (o.progress && progress_mutex.try_lock()) {
        std::lock_guard<std::mutex> lock(progress_mutex, std::adopt_lock);
        o.progress(finished, n);
      }
    });
  } catch (...) {
    created.remove();  // every worker has stopped: parallel_for joins them before it throws
    throw;
  }
  GeneratorSummary s;
  s.files = n;
  s.bytes = bytes;
  s.mean_width = static_cast<double>(widths) / n;
  s.mean_height = static_cast<double>(heights) / n;
  return s;
}

}  // namespace orch::imagedata
