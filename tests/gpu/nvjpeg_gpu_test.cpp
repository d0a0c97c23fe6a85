// The nvjpeg loader on a real GPU: nvJPEG decodes like libjpeg-turbo (on the hardware engines
// and with the CUDA decoder), the crop kernel computes exactly what the CPU loaders compute,
// the loader's batches are on the device, deterministic and the imagefolder loader's crops,
// corrupt files fail or are skipped as configured, and a run trains from it.
#include <c10/cuda/CUDAStream.h>
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <fstream>

#include "crop_resize.h"
#include "dataset/image_folder.h"
#include "dataset/image_generator.h"
#include "dataset/jpeg_codec.h"
#include "dataset/resample.h"
#include "integration/test_support.h"
#include "nvjpeg_decoder.h"
#include "plan/plugin_params.h"
#include "runner/runner.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

// Decodes JPEGs with `d` into one device buffer; returns each image as an H x W x 3 CPU tensor.
std::vector<torch::Tensor> gpu_decode(nvjpeg::Decoder& d, const std::vector<std::vector<std::uint8_t>>& files) {
  std::vector<nvjpeg::ImageInfo> infos;
  std::int64_t total = 0;
  for (const auto& f : files) {
    infos.push_back(d.info(f.data(), f.size()));
    total += std::int64_t{infos.back().width} * infos.back().height * 3;
  }
  auto pixels = torch::empty({total}, torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA));
  std::vector<nvjpeg::DecodeJob> jobs;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    jobs.push_back({files[i].data(), files[i].size(), pixels.data_ptr<std::uint8_t>() + offset,
                    infos[i].width, infos[i].height});
    offset += std::int64_t{infos[i].width} * infos[i].height * 3;
  }
  std::vector<std::string> errors;
  const auto failed = d.decode(jobs, current_stream(), errors);
  INFO((errors.empty() ? std::string() : errors[0]));
  REQUIRE(failed.empty());
  auto host = pixels.cpu();  // synchronises
  std::vector<torch::Tensor> out;
  offset = 0;
  for (const auto& info : infos) {
    const std::int64_t n = std::int64_t{info.width} * info.height * 3;
    out.push_back(host.narrow(0, offset, n).view({info.height, info.width, 3}));
    offset += n;
  }
  return out;
}

torch::Tensor as_tensor(const dataset::RgbImage& img) {
  return torch::from_blob(const_cast<std::uint8_t*>(img.pixels.data()), {img.height, img.width, 3},
                          torch::kUInt8).clone();
}

const std::filesystem::path& dataset_dir() {
  static test::TempDir dir;
  static const bool made = [] {
    dataset::GeneratorOptions o;
    o.classes = 3;
    o.per_class = 12;
    o.seed = 5;
    dataset::make_dataset(dir.path() / "data", o);
    return true;
  }();
  (void)made;
  return dir.path();
}

std::shared_ptr<DataLoader> make_loader(const std::string& plugin, std::map<std::string, Value> params,
                                        std::int64_t seed, std::int64_t batch = 8) {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kDataLoader, plugin);
  REQUIRE(info != nullptr);
  params.emplace("image_size", std::int64_t{64});
  const PluginChoice choice{plugin, resolve_params(*info, params)};
  return test::built_plugins().create_loader(choice, {batch, torch::Device(torch::kCUDA, 0), seed, true});
}

}  // namespace

TEST_CASE("nvJPEG decodes like libjpeg-turbo, on the hardware engines and with CUDA", "[gpu][nvjpeg]") {
  // nvJPEG replicates chroma samples where libjpeg-turbo (and PIL) interpolate them by default
  // ("fancy upsampling"): on this photo-like content that alone moves RGB by ~4 levels on
  // average (seen on the H200). So the decode is checked against libjpeg-turbo without fancy
  // upsampling, and its luma (which upsampling does not touch) against the default decode.
  std::vector<std::vector<std::uint8_t>> files;
  std::vector<dataset::RgbImage> fancy, plain;
  for (int i = 0; i < 5; ++i) {
    files.push_back(dataset::encode_jpeg(dataset::render_image(11, i % 3, i), 90));
    fancy.push_back(dataset::decode_jpeg(files.back().data(), files.back().size()));
    plain.push_back(dataset::decode_jpeg(files.back().data(), files.back().size(), false));
  }
  auto luma = [](const torch::Tensor& hwc) {
    auto f = hwc.to(torch::kFloat64);
    return 0.299 * f.select(2, 0) + 0.587 * f.select(2, 1) + 0.114 * f.select(2, 2);
  };
  for (const char* backend : {"auto", "gpu"}) {
    nvjpeg::Decoder d(backend);
    INFO("backend " << backend << " -> " << d.backend_name());
    const auto decoded = gpu_decode(d, files);
    for (std::size_t i = 0; i < files.size(); ++i) {
      const auto info = d.info(files[i].data(), files[i].size());
      CHECK(info.width == fancy[i].width);
      CHECK(info.height == fancy[i].height);
      CHECK(info.components == 3);
      const auto got = decoded[i].to(torch::kInt32);
      auto vs_plain = (got - as_tensor(plain[i]).to(torch::kInt32)).abs();
      auto vs_fancy = (got - as_tensor(fancy[i]).to(torch::kInt32)).abs();
      auto luma_diff = (luma(decoded[i]) - luma(as_tensor(fancy[i]))).abs();
      const double plain_mean = vs_plain.to(torch::kFloat64).mean().item<double>();
      const double plain_over8 = (vs_plain > 8).to(torch::kFloat64).mean().item<double>();
      const double luma_mean = luma_diff.mean().item<double>();
      std::cout << "nvjpeg " << d.backend_name() << " image " << i << ": mean |diff| vs libjpeg-turbo "
                << "plain upsampling " << plain_mean << " (max " << vs_plain.max().item<int>()
                << ", share over 8 levels " << plain_over8 << "), vs fancy "
                << vs_fancy.to(torch::kFloat64).mean().item<double>() << "; luma vs fancy "
                << luma_mean << " (max " << luma_diff.max().item<double>() << ")\n";
      INFO("image " << i << ": plain mean " << plain_mean << ", over 8 " << plain_over8
                    << ", luma mean " << luma_mean);
      CHECK(luma_mean < 1.0);
      CHECK(plain_mean < 1.5);
      CHECK(plain_over8 < 0.005);
    }
  }
  std::cout << "nvjpeg: auto backend is " << nvjpeg::Decoder("auto").backend_name() << "\n";
  // Something that is not a JPEG is refused at the header, with nvJPEG's reason.
  nvjpeg::Decoder d("auto");
  const std::string junk = "this is not a JPEG file at all";
  CHECK_THROWS_WITH(d.info(reinterpret_cast<const std::uint8_t*>(junk.data()), junk.size()),
                    Contains("JPEG header") && Contains("nvJPEG status"));
}

TEST_CASE("the crop kernel computes exactly what the CPU loaders compute", "[gpu][nvjpeg]") {
  const auto file = dataset::encode_jpeg(dataset::render_image(4, 2, 9), 90);
  const dataset::RgbImage img = dataset::decode_jpeg(file.data(), file.size());
  const auto dev_pixels = as_tensor(img).view({-1}).to(torch::kCUDA);
  const int s = 56;
  struct Case { double x, y, w, h; bool flip; };
  const std::vector<Case> cases = {
      {0, 0, double(img.width), double(img.height), false},         // whole image, downscale
      {10, 20, 30, 25, true},                                         // small crop, upscale, flipped
      {img.width - 40.0, img.height - 33.0, 40, 33, false},           // touching the right/bottom edges
      {0, img.height - 100.0, 77, 100, true}};                        // left/bottom edges, flipped
  for (bool channels_last : {false, true}) {
    for (const auto& c : cases) {
      INFO("box " << c.x << "," << c.y << " " << c.w << "x" << c.h << " flip " << c.flip
                  << " channels_last " << channels_last);
      std::vector<std::uint8_t> rgb(static_cast<std::size_t>(s) * s * 3);
      dataset::resample_bilinear(img, dataset::BoxF{c.x, c.y, c.w, c.h}, s, s, c.flip, rgb.data());
      std::vector<float> want(rgb.size());
      dataset::normalize_imagenet(rgb.data(), s, s, channels_last, want.data());

      nvjpeg::CropJob job{0, img.width, img.height, float(c.x), float(c.y), float(c.w), float(c.h), c.flip};
      auto job_dev = torch::from_blob(&job, {sizeof job}, torch::kUInt8).to(torch::kCUDA);
      auto out = torch::empty({1, 3, s, s}, torch::TensorOptions().device(torch::kCUDA));
      REQUIRE(nvjpeg::crop_resize_normalize(reinterpret_cast<const nvjpeg::CropJob*>(job_dev.data_ptr<std::uint8_t>()),
                                            1, dev_pixels.data_ptr<std::uint8_t>(), s, channels_last,
                                            out.data_ptr<float>(), current_stream()) == cudaSuccess);
      auto got = out.cpu().view({-1});
      auto expected = torch::from_blob(want.data(), {static_cast<std::int64_t>(want.size())}).clone();
      auto diff = (got - expected).abs();
      // Sampling positions are computed in float on the GPU and in double on the CPU: a weight
      // may round to the neighbouring 1/256 now and then, one level at most.
      const double one_level = 1.0 / 255.0 / 0.224 + 1e-5;
      const double exact = (diff < 1e-5).to(torch::kFloat64).mean().item<double>();
      INFO("max diff " << diff.max().item<float>() << ", exact share " << exact);
      CHECK(diff.max().item<float>() <= one_level);
      CHECK(exact > 0.99);
    }
  }
}

TEST_CASE("nvjpeg loader: device batches, deterministic, the imagefolder loader's crops", "[gpu][nvjpeg]") {
  const std::string root = (dataset_dir() / "data").string();
  // a: the defaults (one decoder, PyTorch's allocator); b: nvJPEG's own allocator and one
  // batch ahead; d: three decoders. Batches must come back the same, in the same order,
  // whichever producer made them and wherever its buffers came from.
  auto a = make_loader("nvjpeg", {{"root", root}}, 1);
  auto b = make_loader("nvjpeg", {{"root", root}, {"decoders", std::int64_t{1}}, {"prefetch", std::int64_t{1}},
                                  {"allocator", std::string("cuda")}}, 1);
  auto d = make_loader("nvjpeg", {{"root", root}, {"decoders", std::int64_t{3}}}, 1);
  auto other = make_loader("nvjpeg", {{"root", root}}, 2);
  auto cpu = make_loader("imagefolder", {{"root", root}, {"workers", std::int64_t{2}}}, 1);
  CHECK(a->num_classes() == 3);
  CHECK(a->sample_shape() == std::vector<std::int64_t>{3, 64, 64});
  double same_seed = 0, other_seed = 0;
  // 36 images in batches of 8: 4 per epoch; 6 batches cross into the second epoch.
  for (int i = 0; i < 6; ++i) {
    const Batch x = a->next(), y = b->next(), w = d->next(), z = other->next(), c = cpu->next();
    torch::cuda::synchronize();
    REQUIRE(x.images.is_cuda());
    REQUIRE(x.labels.is_cuda());
    CHECK(x.images.sizes() == torch::IntArrayRef{8, 3, 64, 64});
    CHECK(x.images.is_contiguous(at::MemoryFormat::ChannelsLast));
    CHECK(x.images.scalar_type() == torch::kFloat32);
    CHECK(x.labels.scalar_type() == torch::kInt64);
    CHECK(x.labels.min().item<std::int64_t>() >= 0);
    CHECK(x.labels.max().item<std::int64_t>() < 3);
    // Normalised pixels: (0 - 0.485) / 0.229 = -2.12 .. (1 - 0.406) / 0.225 = 2.64.
    CHECK(x.images.min().item<float>() >= -2.12f);
    CHECK(x.images.max().item<float>() <= 2.65f);
    CHECK(torch::equal(x.images, y.images));
    CHECK(torch::equal(x.labels, y.labels));
    CHECK(torch::equal(x.images, w.images));
    CHECK(torch::equal(x.labels, w.labels));
    // The same samples, crops and flips as the CPU loader; only the decoder (full decode vs
    // DCT-scaled) and so the resampling input differ.
    CHECK(torch::equal(x.labels.cpu(), c.labels.cpu()));
    same_seed += (x.images.cpu() - c.images.cpu()).abs().mean().item<double>();
    other_seed += (z.images.cpu() - c.images.cpu()).abs().mean().item<double>();
  }
  INFO("mean |nvjpeg - imagefolder|: same seed " << same_seed / 6 << ", other seed " << other_seed / 6);
  std::cout << "nvjpeg vs imagefolder, mean |diff| per batch: same seed " << same_seed / 6
            << ", other seed " << other_seed / 6 << "\n";
  CHECK(same_seed < 0.35 * other_seed);
  const auto counters = a->counters();
  CHECK(counters.at("images") >= 48);
  CHECK(counters.at("bytes_read") > 0);
  CHECK(counters.at("skipped") == 0);
  CHECK(counters.count("hardware_decode") == 1);
}

TEST_CASE("nvjpeg loader: a corrupt file fails the run naming it, or is skipped and counted", "[gpu][nvjpeg]") {
  test::TempDir tmp;
  dataset::GeneratorOptions o;
  o.classes = 2;
  o.per_class = 8;
  dataset::make_dataset(tmp.path() / "data", o);
  const auto index = dataset::scan_image_folder(tmp.path() / "data");
  const auto garbage = index.samples[3].path;
  std::ofstream(garbage, std::ios::binary | std::ios::trunc) << "not a jpeg, just text";
  const std::string root = (tmp.path() / "data").string();
  {
    auto loader = make_loader("nvjpeg", {{"root", root}}, 1, 4);
    bool thrown = false;
    try {
      for (int i = 0; i < 8; ++i) loader->next();  // two epochs: every file is read
    } catch (const std::exception& e) {
      thrown = true;
      CHECK_THAT(e.what(), Contains(garbage.filename().string()));
    }
    CHECK(thrown);
  }
  {
    auto loader = make_loader("nvjpeg", {{"root", root}, {"on_error", std::string("skip")}}, 1, 4);
    for (int i = 0; i < 8; ++i) {
      const Batch b = loader->next();
      CHECK(b.images.size(0) == 4);
    }
    torch::cuda::synchronize();
    CHECK(loader->counters().at("skipped") >= 2);  // once per epoch
  }
  // A truncated file: its header parses, its data ends early. Whatever nvJPEG makes of it (an
  // error, or a partly grey image as libjpeg-turbo does), the loader must not crash.
  const auto truncated = index.samples[5].path;
  auto bytes = dataset::read_file(truncated);
  std::ofstream(truncated, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size() / 2));
  auto loader = make_loader("nvjpeg", {{"root", root}, {"on_error", std::string("skip")}}, 1, 4);
  for (int i = 0; i < 8; ++i) loader->next();
  torch::cuda::synchronize();
  std::cout << "nvjpeg with one garbage and one truncated file, on_error skip: skipped "
            << loader->counters().at("skipped") << " in 2 epochs\n";
  CHECK(loader->counters().at("skipped") >= 2);
}

TEST_CASE("a ResNet run trains from the nvjpeg loader", "[gpu][nvjpeg]") {
  // Eager, and captured in a CUDA graph while the loader's threads keep calling CUDA (a
  // global-mode capture failed on that: bench/nvjpeg-graph-h200.yaml on the H200).
  const std::string strategy = GENERATE(std::string("default"), std::string("cuda-graph"));
  INFO("stream " << strategy);
  RunSpec spec = test::small_cpu_spec();
  spec.stream = test::choice(strategy);
  if (strategy == "cuda-graph") spec.stream.params.set("warmup_steps", std::int64_t{2});
  spec.optimizer.impl = "fused";
  spec.device = "cuda";
  spec.memory_format = "channels_last";
  const PluginInfo* info = test::built_plugins().find(PluginKind::kDataLoader, "nvjpeg");
  REQUIRE(info != nullptr);
  spec.data = {"nvjpeg", resolve_params(*info, {{"root", (dataset_dir() / "data").string()},
                                                {"image_size", std::int64_t{64}}})};
  spec.precision = test::choice("amp", {{"dtype", std::string("bf16")}});
  spec.warmup_steps = 2;
  spec.measure_steps = 8;
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(1));
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["metrics"]["images_per_s"].get<double>() > 0);
  CHECK(doc["counters"]["data.images"].get<double>() >= 80);
  if (strategy == "cuda-graph") CHECK(doc["counters"]["stream.replays"].get<double>() > 0);
}
