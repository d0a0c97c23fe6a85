// The `imagefolder` data loader: an ImageNet-layout image folder decoded on the CPU (JPEGs with
// libjpeg-turbo, PNGs with libpng, by content whatever the extension) by a pool of worker threads.
// Each sample is decoded only as far as its random crop needs (DCT scaling to the smallest scale
// that keeps the crop at least image_size, rows above the crop skipped, columns around it not
// decoded), resized, flipped, normalised and written straight into a (pinned) batch tensor; a
// bounded queue holds `prefetch` batches.
#include <orch/data_loader.h>
#include <orch/imagedata/augment.h>
#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/image_folder.h>
#include <orch/loaderkit/batch_pipeline.h>
#include <torch/torch.h>

#include <iostream>

#include "plugin_schemas.h"

namespace orch::imagefolder {
namespace {

class FolderSource final : public loaderkit::SampleSource {
 public:
  explicit FolderSource(imagedata::FolderIndex index) : index_(std::move(index)) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(index_.samples.size()); }
  std::int32_t label(std::int64_t i) const override {
    return index_.samples[static_cast<std::size_t>(i)].label;
  }
  void load(std::int64_t i, imagedata::SampleRng& rng, int out_size, std::uint8_t* out,
            std::uint64_t& bytes) const override {
    const auto& path = index_.samples[static_cast<std::size_t>(i)].path;
    std::vector<std::uint8_t> data = imagedata::read_file(path);  // names the path itself
    bytes += data.size();
    try {
      imagedata::augment_image(data.data(), data.size(), rng, out_size, out);
    } catch (const imagedata::DatasetError& e) {
      throw imagedata::with_path(path.string(), e);  // keeps the reason skips are counted by
    }
  }
  std::map<std::string, std::int64_t> skipped_at_start() const override {
    return index_.skipped_by_reason();
  }
  std::int64_t classes() const { return static_cast<std::int64_t>(index_.classes.size()); }

 private:
  imagedata::FolderIndex index_;
};

// The root is checked before scanning, so the error names the setting.
std::unique_ptr<FolderSource> open_folder(const Params& p) {
  const std::string& root = p.get_string("root");
  if (root.empty())
    throw std::invalid_argument(
        "data.root is not set: give the dataset folder (DIR/train/<class>/*.JPEG), e.g. "
        "data: {plugin: imagefolder, root: /data/imagenet}");
  imagedata::ScanOptions scan;
  scan.split = p.get_string("split");
  scan.skip_errors = p.get_string("on_error") == "skip";
  imagedata::FolderIndex index = imagedata::scan_image_folder(root, scan);
  // Into the run's log: which files the counters' skips were.
  for (const auto& s : index.skipped) std::cerr << "orch: data: skipped " << s.message << "\n";
  return std::make_unique<FolderSource>(std::move(index));
}

// A missing or empty dataset folder is found when the experiment is planned, not hours later
// when the run starts; only on the machine that runs it (a Slurm plan is checked elsewhere).
std::vector<PlanProblem> check_plan(const PlanCheckInput& in) {
  const std::string root = in.text("data.root");
  if (root.empty()) {
    return {{{"data.root", "data"},
             "data.root is not set: give the dataset folder (DIR/train/<class>/*.JPEG)",
             "a folder of class folders of JPEG files"}};
  }
  if (!in.on_this_machine) return {};
  if (std::string why = imagedata::image_folder_problem(root); !why.empty()) {
    return {{{"data.root"}, why, "a folder of class folders of JPEG files"}};
  }
  return {};
}

class ImageFolderPlugin final : public DataLoaderPlugin {
 public:
  PluginInfo info() const override {
    PluginInfo i = plugin_schemas::imagefolder();
    i.check = check_plan;
    return i;
  }
  std::unique_ptr<DataLoader> create(const Params& p, const LoaderContext& ctx) const override {
    auto source = open_folder(p);
    const std::int64_t classes = source->classes();
    return std::make_unique<loaderkit::PipelineLoader>(std::move(source), classes, p, ctx,
                                                       p.get_string("on_error") == "skip");
  }
};

}  // namespace
}  // namespace orch::imagefolder

ORCH_PLUGIN(orch::imagefolder::ImageFolderPlugin)
