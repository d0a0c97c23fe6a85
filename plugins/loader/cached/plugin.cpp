// The `cached` data loader: the article's "ultimate test". Images pre-decoded by `orch dataset
// cache` are read from a memory-mapped file; the same random-resized-crop, flip and
// normalisation as `imagefolder` follow, so only the decoding cost is gone.
#include <orch/data_loader.h>
#include <torch/torch.h>

#include "../common/batch_pipeline.h"
#include "dataset/augment.h"
#include "dataset/image_cache.h"

namespace orch::cached {
namespace {

class CacheSource final : public loaders::SampleSource {
 public:
  explicit CacheSource(const std::string& path) : cache_(path) {}
  std::int64_t size() const override { return cache_.size(); }
  std::int32_t label(std::int64_t i) const override { return cache_.label(i); }
  void load(std::int64_t i, dataset::SampleRng& rng, int out_size, std::uint8_t* out,
            std::uint64_t& bytes) const override {
    const int s = cache_.image_size();
    dataset::augment_rgb(cache_.pixels(i), s, s, rng, out_size, out);
    bytes += static_cast<std::uint64_t>(s) * s * 3;
  }
  std::int64_t classes() const { return static_cast<std::int64_t>(cache_.classes().size()); }

 private:
  dataset::ImageCache cache_;
};

class CachedLoader final : public DataLoader {
 public:
  CachedLoader(const Params& p, const LoaderContext& ctx) : size_(p.get_int("image_size")) {
    const std::string& path = p.get_string("path");
    if (path.empty())
      throw std::invalid_argument(
          "data.path is not set: give the cache file made by `orch dataset cache SRC DST`");
    auto source = std::make_unique<CacheSource>(path);
    classes_ = source->classes();
    loaders::PipelineOptions o;
    o.batch_size = ctx.batch_size;
    o.image_size = static_cast<int>(size_);
    o.workers = loaders::resolve_workers(p.get_int("workers"));
    o.prefetch = static_cast<int>(p.get_int("prefetch"));
    o.shuffle = p.get_bool("shuffle");
    o.drop_last = p.get_bool("drop_last");
    o.pin_memory = p.get_bool("pin_memory") && ctx.device.is_cuda();
    o.channels_last = ctx.channels_last;
    o.seed = static_cast<std::uint64_t>(ctx.seed);
    pipeline_ = std::make_unique<loaders::BatchPipeline>(std::move(source), o);
  }
  std::vector<std::int64_t> sample_shape() const override { return {3, size_, size_}; }
  std::int64_t num_classes() const override { return classes_; }
  Batch next() override { return pipeline_->next(); }
  std::map<std::string, double> counters() const override { return pipeline_->counters(); }

 private:
  std::int64_t size_, classes_ = 0;
  std::unique_ptr<loaders::BatchPipeline> pipeline_;
};

class CachedPlugin final : public DataLoaderPlugin {
 public:
  PluginInfo info() const override {
    return {"cached", PluginKind::kDataLoader, "1.0.0",
            "pre-decoded images from an `orch dataset cache` file (memory-mapped), "
            "random-resized-crop + flip + normalize",
            {{"path", ParamType::kString, std::string(""), {}, {}, {},
              "the cache file written by `orch dataset cache`"},
             {"workers", ParamType::kInt, std::int64_t{0}, {}, 0, 256,
              "augmentation threads; 0: min(16, cores - 2), at least 1"},
             {"prefetch", ParamType::kInt, std::int64_t{3}, {}, 1, 64,
              "batches being prepared or ready ahead of the training loop"},
             {"pin_memory", ParamType::kBool, true, {}, {}, {},
              "assemble batches in page-locked memory (CUDA runs only)"},
             {"shuffle", ParamType::kBool, true, {}, {}, {},
              "a new order every epoch, from the run's seed"},
             {"drop_last", ParamType::kBool, true, {}, {}, {},
              "drop an epoch's incomplete last batch"},
             {"image_size", ParamType::kInt, std::int64_t{224}, {}, 16, 1024,
              "height and width of the random-resized crop"}}};
  }
  std::unique_ptr<DataLoader> create(const Params& p, const LoaderContext& ctx) const override {
    return std::make_unique<CachedLoader>(p, ctx);
  }
};

}  // namespace
}  // namespace orch::cached

ORCH_PLUGIN(orch::cached::CachedPlugin)
