// The `cached` data loader: the article's "ultimate test". Images pre-decoded by `orch dataset
// cache` are read from a memory-mapped file; the same random-resized-crop, flip and
// normalisation as `imagefolder` follow, so only the decoding cost is gone.
#include <orch/data_loader.h>
#include <orch/imagedata/augment.h>
#include <orch/imagedata/image_cache.h>
#include <orch/loaderkit/batch_pipeline.h>
#include <torch/torch.h>

#include <filesystem>

#include "plugin_schemas.h"

namespace orch::cached {
namespace {

class CacheSource final : public loaderkit::SampleSource {
 public:
  explicit CacheSource(const std::string& path) : cache_(path) {}
  std::int64_t size() const override { return cache_.size(); }
  std::int32_t label(std::int64_t i) const override { return cache_.label(i); }
  void load(std::int64_t i, imagedata::SampleRng& rng, int out_size, std::uint8_t* out,
            std::uint64_t& bytes) const override {
    const int s = cache_.image_size();
    imagedata::augment_rgb(cache_.pixels(i), s, s, rng, out_size, out);
    bytes += static_cast<std::uint64_t>(s) * s * 3;
  }
  std::int64_t classes() const { return static_cast<std::int64_t>(cache_.classes().size()); }

 private:
  imagedata::ImageCache cache_;
};

// The path is checked before the cache is opened, so the error names the setting.
std::unique_ptr<CacheSource> open_cache(const Params& p) {
  const std::string& path = p.get_string("path");
  if (path.empty())
    throw std::invalid_argument(
        "data.path is not set: give the cache file made by `orch dataset cache SRC DST`");
  return std::make_unique<CacheSource>(path);
}

// A cache file that is not there is found when the experiment is planned (only on the machine
// that runs it); whether it is a valid cache is left to opening it.
std::vector<PlanProblem> check_plan(const PlanCheckInput& in) {
  const std::string path = in.text("data.path");
  if (path.empty()) {
    return {{{"data.path", "data"},
             "data.path is not set: give the cache file made by `orch dataset cache SRC DST`",
             "an `orch dataset cache` file"}};
  }
  if (!in.on_this_machine) return {};
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  using std::filesystem::file_type;
  if (st.type() == file_type::regular) return {};
  // Said as what is there: a device (/dev/zero) or a folder is no "missing file".
  std::string what;
  switch (st.type()) {
    case file_type::not_found:
      what = "no such file (relative paths are taken from the current directory)";
      break;
    case file_type::directory:
      what = "is a folder, not a cache file";
      break;
    case file_type::character:
      what = "is not a regular file (a character device)";
      break;
    case file_type::block:
      what = "is not a regular file (a block device)";
      break;
    case file_type::fifo:
      what = "is not a regular file (a FIFO)";
      break;
    case file_type::socket:
      what = "is not a regular file (a socket)";
      break;
    default:
      what = "cannot be read: " + ec.message();
  }
  return {{{"data.path"}, path + ": " + what, "an `orch dataset cache` file"}};
}

class CachedPlugin final : public DataLoaderPlugin {
 public:
  PluginInfo info() const override {
    PluginInfo i = plugin_schemas::cached();
    i.check = check_plan;
    return i;
  }
  std::unique_ptr<DataLoader> create(const Params& p, const LoaderContext& ctx) const override {
    auto source = open_cache(p);
    const std::int64_t classes = source->classes();
    return std::make_unique<loaderkit::PipelineLoader>(std::move(source), classes, p, ctx, false);
  }
};

}  // namespace
}  // namespace orch::cached

ORCH_PLUGIN(orch::cached::CachedPlugin)
