// `centercrop`: an example data loader plugin built outside orch's tree from the libraries orch
// installs with its SDK. It reads an ImageNet-layout JPEG folder (such as `orch dataset make`
// writes) and gives each image's centre square resized to image_size, with no random
// augmentation: evaluation-style input, which none of orch's own loaders produce.
//   orch::imagedata  scans the folder (labels from sorted class folders) and decodes only the
//                    centre square, at the smallest DCT scale that still covers image_size
//   orch::loaderkit  does everything else a CPU loader needs: worker threads, the epoch order
//                    from the run's seed, pinned batch tensors, prefetch, the shared parameters
// so the plugin itself is only the SampleSource below.
#include <orch/data_loader.h>
#include <orch/imagedata/image_folder.h>
#include <orch/imagedata/jpeg_codec.h>
#include <orch/imagedata/resample.h>
#include <orch/imagedata/sample_random.h>
#include <orch/loaderkit/batch_pipeline.h>
#include <torch/torch.h>

#include <stdexcept>

namespace centercrop {
namespace {

namespace imagedata = orch::imagedata;

class CenterCropSource final : public orch::loaderkit::SampleSource {
 public:
  explicit CenterCropSource(imagedata::FolderIndex index) : index_(std::move(index)) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(index_.samples.size()); }
  std::int32_t label(std::int64_t i) const override {
    return index_.samples[static_cast<std::size_t>(i)].label;
  }
  // No randomness: the sample's generator goes unused, so every epoch gives the same pixels.
  void load(std::int64_t i, imagedata::SampleRng&, int out_size, std::uint8_t* out,
            std::uint64_t& bytes) const override {
    const auto& path = index_.samples[static_cast<std::size_t>(i)].path;
    const std::vector<std::uint8_t> jpeg = imagedata::read_file(path);  // names the path itself
    bytes += jpeg.size();
    try {
      const imagedata::JpegSize full = imagedata::read_jpeg_size(jpeg.data(), jpeg.size());
      const imagedata::DecodedRegion region = imagedata::decode_jpeg_region(
          jpeg.data(), jpeg.size(), imagedata::center_square(full.width, full.height), out_size,
          out_size);
      imagedata::resample_bilinear(region.image, region.crop, out_size, out_size,
                                   /*flip=*/false, out);
    } catch (const std::exception& e) {
      throw std::runtime_error(path.string() + ": " + e.what());
    }
  }
  std::int64_t classes() const { return static_cast<std::int64_t>(index_.classes.size()); }

 private:
  imagedata::FolderIndex index_;
};

// Run by `orch plan` for every configuration: a dataset folder that is missing or holds no
// images is reported at the line of `root:` before anything runs. Files are looked at only when
// the runs execute on this machine (not for a Slurm submission from a login node).
std::vector<orch::PlanProblem> check_plan(const orch::PlanCheckInput& in) {
  const std::string root = in.text("data.root");
  if (root.empty()) return {{{"data.root", "data"}, "data.root is not set", "a JPEG folder"}};
  if (!in.on_this_machine) return {};
  if (std::string why = imagedata::image_folder_problem(root); !why.empty()) {
    return {{{"data.root"}, why, "a JPEG folder"}};
  }
  return {};
}

class CenterCropPlugin final : public orch::DataLoaderPlugin {
 public:
  orch::PluginInfo info() const override {
    orch::PluginInfo i{
        "centercrop", orch::PluginKind::kDataLoader, "0.1.0",
        "example out-of-tree loader: a JPEG folder, centre square resized, no augmentation",
        params()};
    i.check = check_plan;
    return i;
  }
  static std::vector<orch::ParamSpec> params() {
    std::vector<orch::ParamSpec> out = {orch::param("root").string().doc(
        "the dataset folder: DIR/train/<class>/*.JPEG (or DIR/<class>/*.JPEG)")};
    // workers, prefetch, pin_memory, shuffle, drop_last, image_size: as orch's own loaders.
    for (auto& spec : orch::loaderkit::pipeline_params("decoding threads")) out.push_back(spec);
    return out;
  }
  std::unique_ptr<orch::DataLoader> create(const orch::Params& p,
                                           const orch::LoaderContext& ctx) const override {
    const std::string& root = p.get_string("root");
    if (root.empty()) throw std::invalid_argument("data.root is not set: give the dataset folder");
    auto source = std::make_unique<CenterCropSource>(imagedata::scan_image_folder(root));
    const std::int64_t classes = source->classes();
    return std::make_unique<orch::loaderkit::PipelineLoader>(std::move(source), classes, p, ctx,
                                                             /*skip_errors=*/false);
  }
};

}  // namespace
}  // namespace centercrop

ORCH_PLUGIN(centercrop::CenterCropPlugin)
