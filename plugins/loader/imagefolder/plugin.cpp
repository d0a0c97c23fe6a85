// The `imagefolder` data loader: an ImageNet-layout JPEG folder decoded on the CPU with
// libjpeg-turbo by a pool of worker threads. Each sample is decoded only as far as its random
// crop needs (DCT scaling to the smallest scale that keeps the crop at least image_size, rows
// above the crop skipped, columns around it not decoded), resized, flipped, normalised and
// written straight into a (pinned) batch tensor; a bounded queue holds `prefetch` batches.
#include <orch/data_loader.h>
#include <torch/torch.h>

#include "../common/batch_pipeline.h"
#include "dataset/augment.h"
#include "dataset/image_folder.h"

namespace orch::imagefolder {
namespace {

class FolderSource final : public loaders::SampleSource {
 public:
  explicit FolderSource(dataset::FolderIndex index) : index_(std::move(index)) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(index_.samples.size()); }
  std::int32_t label(std::int64_t i) const override {
    return index_.samples[static_cast<std::size_t>(i)].label;
  }
  void load(std::int64_t i, dataset::SampleRng& rng, int out_size, std::uint8_t* out,
            std::uint64_t& bytes) const override {
    const auto& path = index_.samples[static_cast<std::size_t>(i)].path;
    std::vector<std::uint8_t> data = dataset::read_file(path);  // names the path itself
    bytes += data.size();
    try {
      dataset::augment_jpeg(data.data(), data.size(), rng, out_size, out);
    } catch (const std::exception& e) {
      throw std::runtime_error(path.string() + ": " + e.what());
    }
  }
  std::int64_t classes() const { return static_cast<std::int64_t>(index_.classes.size()); }

 private:
  dataset::FolderIndex index_;
};

class ImageFolderLoader final : public DataLoader {
 public:
  ImageFolderLoader(const Params& p, const LoaderContext& ctx) : size_(p.get_int("image_size")) {
    const std::string& root = p.get_string("root");
    if (root.empty())
      throw std::invalid_argument(
          "data.root is not set: give the dataset folder (DIR/train/<class>/*.JPEG), e.g. "
          "data: {plugin: imagefolder, root: /data/imagenet}");
    auto source = std::make_unique<FolderSource>(dataset::scan_image_folder(root));
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
    o.skip_errors = p.get_string("on_error") == "skip";
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

class ImageFolderPlugin final : public DataLoaderPlugin {
 public:
  PluginInfo info() const override {
    return {"imagefolder", PluginKind::kDataLoader, "1.0.0",
            "JPEG folder (ImageNet layout) decoded on the CPU by worker threads, "
            "random-resized-crop + flip + normalize",
            {{"root", ParamType::kString, std::string(""), {}, {}, {},
              "the dataset folder: DIR/train/<class>/*.JPEG (or DIR/<class>/*.JPEG)"},
             {"workers", ParamType::kInt, std::int64_t{0}, {}, 0, 256,
              "decoding threads; 0: min(16, cores - 2), at least 1"},
             {"prefetch", ParamType::kInt, std::int64_t{3}, {}, 1, 64,
              "batches being prepared or ready ahead of the training loop"},
             {"pin_memory", ParamType::kBool, true, {}, {}, {},
              "assemble batches in page-locked memory (CUDA runs only)"},
             {"shuffle", ParamType::kBool, true, {}, {}, {},
              "a new order every epoch, from the run's seed"},
             {"drop_last", ParamType::kBool, true, {}, {}, {},
              "drop an epoch's incomplete last batch"},
             {"image_size", ParamType::kInt, std::int64_t{224}, {}, 16, 1024,
              "height and width of the random-resized crop"},
             {"on_error", ParamType::kString, std::string("fail"),
              {std::string("fail"), std::string("skip")}, {}, {},
              "an unreadable or corrupt file fails the run, or is counted and skipped"}}};
  }
  std::unique_ptr<DataLoader> create(const Params& p, const LoaderContext& ctx) const override {
    return std::make_unique<ImageFolderLoader>(p, ctx);
  }
};

}  // namespace
}  // namespace orch::imagefolder

ORCH_PLUGIN(orch::imagefolder::ImageFolderPlugin)
