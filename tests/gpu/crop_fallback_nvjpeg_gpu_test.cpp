// The nvjpeg loader where the GPU cannot run its crop kernel (the test hook
// ORCH_TEST_PRETEND_NO_KERNEL_IMAGE=1 standing in for a build without an image or PTX for it):
// every image is decoded and cropped on the CPU, giving the imagefolder loader's batches, and
// the loader counts why. (Named *nvjpeg_gpu_test* so builds without nvJPEG leave it out.)
#include <orch/imagedata/image_generator.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "gpu/gpu_env_support.h"
#include "integration/test_support.h"
#include "plan/plugin_params.h"

using namespace orch;

namespace {

std::shared_ptr<DataLoader> loader(const std::string& plugin, const std::string& root) {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kDataLoader, plugin);
  REQUIRE(info != nullptr);
  const PluginChoice choice{
      plugin, resolve_params(*info, {{"root", root}, {"image_size", std::int64_t{64}}})};
  return test::built_plugins().create_loader(choice, {8, torch::Device(torch::kCUDA, 0), 1, true});
}

}  // namespace

TEST_CASE("nvjpeg loader: without the crop kernel every image is decoded on the CPU, counted",
          "[gpu][nvjpeg][kernels]") {
  test::TempDir dir;
  imagedata::GeneratorOptions o;
  o.classes = 3;
  o.per_class = 8;
  o.seed = 7;
  imagedata::make_dataset(dir.path() / "data", o);
  const std::string root = (dir.path() / "data").string();

  const test::ScopedEnv pretend("ORCH_TEST_PRETEND_NO_KERNEL_IMAGE", "1");
  auto fallback = loader("nvjpeg", root);
  auto cpu = loader("imagefolder", root);
  for (int i = 0; i < 4; ++i) {  // crosses into the second epoch
    INFO("batch " << i);
    const Batch f = fallback->next(), c = cpu->next();
    REQUIRE(f.images.is_cuda());
    CHECK(f.images.is_contiguous(at::MemoryFormat::ChannelsLast));
    CHECK(torch::equal(f.images.cpu(), c.images.cpu()));
    CHECK(torch::equal(f.labels.cpu(), c.labels.cpu()));
  }
  const auto counters = fallback->counters();
  CHECK(counters.at("crop_kernel_unavailable.no_kernel_image") == 1);
  CHECK(counters.at("cpu_decodes") == counters.at("images"));
  CHECK(counters.at("decode_nvjpeg_ms") == 0);  // nvJPEG never called
}
