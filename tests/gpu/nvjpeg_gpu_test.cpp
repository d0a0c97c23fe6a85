// The nvjpeg loader on a real GPU: nvJPEG decodes like libjpeg-turbo (on the hardware engines
// and with the CUDA decoder), the crop kernel computes exactly what the CPU loaders compute,
// the loader's batches are on the device, deterministic and the imagefolder loader's crops,
// corrupt files fail or are skipped as configured, and a run trains from it. `output: yuv`
// (nvJPEG's Y, Cb, Cr planes converted in the crop kernel) gives the `output: rgb` path's
// pixels and batches, exactly on the hardware engines. `cpu_share` puts imagefolder's pixels in
// a batch's last rows and nvJPEG's in the others.
#include <c10/cuda/CUDAStream.h>
#include <orch/imagedata/image_folder.h>
#include <orch/imagedata/image_generator.h>
#include <orch/imagedata/jpeg_codec.h>
#include <orch/imagedata/resample.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <thread>

#include "crop_resize.h"
#include "integration/test_support.h"
#include "nvjpeg_decoder.h"
#include "plan/plugin_params.h"
#include "runner/runner.h"
#include "unit/image_fixture_support.h"
#include "unit/jpeg_sampling_support.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

using Files = std::vector<std::vector<std::uint8_t>>;

// A batch decoded by `d` (in its output format) into one device buffer, laid out as the loader
// lays it out.
struct DeviceImages {
  torch::Tensor pixels;  // uint8 on the device
  nvjpeg::BatchLayout layout;
  std::vector<nvjpeg::ImageInfo> infos;
};

DeviceImages decode_on_device(nvjpeg::Decoder& d, const Files& files) {
  DeviceImages out;
  for (const auto& f : files) out.infos.push_back(d.info(f.data(), f.size()));
  out.layout = nvjpeg::layout_batch(out.infos, d.output());
  out.pixels = torch::empty({out.layout.bytes},
                            torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA));
  std::vector<nvjpeg::DecodeJob> jobs;
  for (std::size_t i = 0; i < files.size(); ++i)
    jobs.push_back(nvjpeg::decode_job(out.layout, i, out.infos[i], files[i].data(), files[i].size(),
                                      out.pixels.data_ptr<std::uint8_t>()));
  std::vector<std::string> errors;
  const auto failed = d.decode(jobs, current_stream(), errors);
  INFO((errors.empty() ? std::string() : errors[0]));
  REQUIRE(failed.empty());
  return out;
}

// Each image as an H x W x 3 CPU tensor: the interleaved RGB as decoded, or the planes converted
// on the CPU by ycc_pixel_rgb (what the crop kernel does for the pixels it samples).
std::vector<torch::Tensor> to_rgb(const DeviceImages& images) {
  const auto host = images.pixels.cpu();  // synchronises
  std::vector<torch::Tensor> out;
  for (std::size_t i = 0; i < images.infos.size(); ++i) {
    const int w = images.infos[i].width, h = images.infos[i].height;
    const std::int64_t offset = images.layout.offset[i];
    if (!images.layout.ycc[i]) {
      out.push_back(host.narrow(0, offset, std::int64_t{w} * h * 3).view({h, w, 3}));
      continue;
    }
    auto rgb = torch::empty({h, w, 3}, torch::kUInt8);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        nvjpeg::ycc_pixel_rgb(host.data_ptr<std::uint8_t>() + offset, images.layout.planes[i], x, y,
                              rgb.data_ptr<std::uint8_t>() + (std::int64_t{y} * w + x) * 3);
    out.push_back(rgb);
  }
  return out;
}

// Decodes JPEGs with `d` into one device buffer; returns each image as an H x W x 3 CPU tensor.
std::vector<torch::Tensor> gpu_decode(nvjpeg::Decoder& d, const Files& files) {
  return to_rgb(decode_on_device(d, files));
}

// The crop kernel on `images` with one job per (image, box, flip): N x 3 x s x s on the device.
struct Box {
  std::size_t image;
  float x, y, w, h;
  bool flip;
};
torch::Tensor crop_on_device(const DeviceImages& images, const std::vector<Box>& boxes, int s,
                             bool channels_last) {
  std::vector<nvjpeg::CropJob> jobs;
  for (const Box& b : boxes) {
    const auto& info = images.infos[b.image];
    jobs.push_back({images.layout.offset[b.image], info.width, info.height, b.x, b.y, b.w, b.h,
                    b.flip ? 1 : 0,
                    images.layout.ycc[b.image] ? nvjpeg::kCropYcc : nvjpeg::kCropRgbi,
                    images.layout.planes[b.image]});
  }
  const auto n = static_cast<std::int64_t>(jobs.size());
  auto jobs_dev =
      torch::from_blob(jobs.data(), {n * std::int64_t{sizeof(nvjpeg::CropJob)}}, torch::kUInt8)
          .to(torch::kCUDA);
  auto out =
      torch::empty({n, 3, s, s}, torch::TensorOptions()
                                     .device(torch::kCUDA)
                                     .memory_format(channels_last ? at::MemoryFormat::ChannelsLast
                                                                  : at::MemoryFormat::Contiguous));
  REQUIRE(nvjpeg::crop_resize_normalize(
              reinterpret_cast<const nvjpeg::CropJob*>(jobs_dev.data_ptr<std::uint8_t>()),
              static_cast<int>(n), images.pixels.data_ptr<std::uint8_t>(), s, channels_last,
              out.data_ptr<float>(), current_stream()) == cudaSuccess);
  return out;
}

// |a - b| of two normalised batches (N x 3 x S x S) in 0..255 levels, on the CPU.
torch::Tensor level_diff(const torch::Tensor& a, const torch::Tensor& b) {
  const auto std_dev = torch::tensor({0.229f, 0.224f, 0.225f}).view({1, 3, 1, 1});
  return (a.cpu() - b.cpu()).abs() * std_dev * 255.0f;
}

// The bounds the first test allows the CUDA decoder against libjpeg-turbo with plain
// upsampling: mean under 1.5 levels, under 0.5% of values more than 8 levels off.
void check_close_levels(const torch::Tensor& levels, const std::string& what) {
  const auto f = levels.to(torch::kFloat64);
  const double mean = f.mean().item<double>(),
               over8 = (f > 8).to(torch::kFloat64).mean().item<double>();
  std::cout << what << ": mean |diff| " << mean << " levels (max " << f.max().item<double>()
            << ", share over 8 " << over8 << ")\n";
  INFO(what << ": mean " << mean << ", over 8 " << over8);
  CHECK(mean < 1.5);
  CHECK(over8 < 0.005);
}

// Odd sizes and several subsamplings (the dataset generator writes 4:2:0 only).
Files sampled_files() {
  const imagedata::RgbImage photo = imagedata::render_image(11, 0, 2);  // 500 x 375
  return {test::encode_sampled(photo, 90, test::kS420),
          test::encode_sampled(test::crop_rgb(photo, 333, 251), 90, test::kS420),
          test::encode_sampled(test::crop_rgb(photo, 301, 199), 90, test::kS444),
          test::encode_sampled(test::crop_rgb(photo, 257, 183), 90, test::kS422),
          test::encode_sampled(test::crop_rgb(photo, 211, 167), 90, test::kGray)};
}

torch::Tensor as_tensor(const imagedata::RgbImage& img) {
  return torch::from_blob(const_cast<std::uint8_t*>(img.pixels.data()), {img.height, img.width, 3},
                          torch::kUInt8)
      .clone();
}

const std::filesystem::path& dataset_dir() {
  static test::TempDir dir;
  static const bool made = [] {
    imagedata::GeneratorOptions o;
    o.classes = 3;
    o.per_class = 12;
    o.seed = 5;
    imagedata::make_dataset(dir.path() / "data", o);
    return true;
  }();
  (void)made;
  return dir.path();
}

std::shared_ptr<DataLoader> make_loader(const std::string& plugin,
                                        std::map<std::string, Value> params, std::int64_t seed,
                                        std::int64_t batch = 8) {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kDataLoader, plugin);
  REQUIRE(info != nullptr);
  params.emplace("image_size", std::int64_t{64});
  const PluginChoice choice{plugin, resolve_params(*info, params)};
  return test::built_plugins().create_loader(choice,
                                             {batch, torch::Device(torch::kCUDA, 0), seed, true});
}

}  // namespace

TEST_CASE("nvJPEG decodes like libjpeg-turbo, on the hardware engines and with CUDA",
          "[gpu][nvjpeg]") {
  // nvJPEG replicates chroma samples where libjpeg-turbo (and PIL) interpolate them by default
  // ("fancy upsampling"): on this photo-like content that alone moves RGB by ~4 levels on
  // average. So the decode is checked against libjpeg-turbo without fancy
  // upsampling, and its luma (which upsampling does not touch) against the default decode.
  std::vector<std::vector<std::uint8_t>> files;
  std::vector<imagedata::RgbImage> fancy, plain;
  for (int i = 0; i < 5; ++i) {
    files.push_back(imagedata::encode_jpeg(imagedata::render_image(11, i % 3, i), 90));
    fancy.push_back(imagedata::decode_jpeg(files.back().data(), files.back().size()));
    plain.push_back(imagedata::decode_jpeg(files.back().data(), files.back().size(), false));
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
      std::cout << "nvjpeg " << d.backend_name() << " image " << i
                << ": mean |diff| vs libjpeg-turbo "
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

TEST_CASE("nvjpeg hw_pipeline false decodes the same pixels as the pipelined decoder",
          "[gpu][nvjpeg]") {
  // NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE only changes how nvJPEG schedules a batch on the
  // engines; the pixels must be the pipelined decoder's exactly. Without engines both handles
  // are the CUDA decoder and the check is the same.
  Files files;
  for (int i = 0; i < 9; ++i)
    files.push_back(imagedata::encode_jpeg(imagedata::render_image(21, i % 3, i), 85));
  nvjpeg::Decoder pipelined("auto"), unpipelined("auto", nullptr, nvjpeg::Output::kRgbi, false);
  INFO("backend " << pipelined.backend_name());
  CHECK(pipelined.hardware() == unpipelined.hardware());
  const auto a = gpu_decode(pipelined, files), b = gpu_decode(unpipelined, files);
  REQUIRE(a.size() == files.size());
  REQUIRE(b.size() == files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    INFO("image " << i);
    CHECK(torch::equal(a[i], b[i]));
  }
}

TEST_CASE("nvjpeg preallocated buffers decode the same pixels, also past the hint",
          "[gpu][nvjpeg]") {
  // Hints below the batch (9 images) and the images (~500x375) make nvJPEG grow its buffers;
  // one at a typical size does not. Two rounds each: the second reuses what the first left.
  Files files;
  for (int i = 0; i < 9; ++i)
    files.push_back(imagedata::encode_jpeg(imagedata::render_image(22, i % 3, i), 85));
  nvjpeg::Decoder plain("auto", nullptr, nvjpeg::Output::kRgbi, false);
  nvjpeg::Decoder small("auto", nullptr, nvjpeg::Output::kRgbi, false, {2, 64, 64});
  nvjpeg::Decoder typical("auto", nullptr, nvjpeg::Output::kRgbi, false, {9, 512, 512});
  INFO("backend " << plain.backend_name());
  std::cout << "nvjpeg " << plain.backend_name() << ": " << plain.hardware_engines()
            << " engines x " << plain.cores_per_engine() << " cores\n";
  CHECK((plain.hardware_engines() > 0) == plain.hardware());
  const auto want = gpu_decode(plain, files);
  REQUIRE(want.size() == files.size());
  for (nvjpeg::Decoder* d : {&small, &typical}) {
    for (int round = 0; round < 2; ++round) {
      const auto got = gpu_decode(*d, files);
      REQUIRE(got.size() == files.size());
      for (std::size_t i = 0; i < files.size(); ++i) {
        INFO("round " << round << ", image " << i);
        CHECK(torch::equal(got[i], want[i]));
      }
    }
  }
}

TEST_CASE("the crop kernel computes exactly what the CPU loaders compute", "[gpu][nvjpeg]") {
  const auto file = imagedata::encode_jpeg(imagedata::render_image(4, 2, 9), 90);
  const imagedata::RgbImage img = imagedata::decode_jpeg(file.data(), file.size());
  const auto dev_pixels = as_tensor(img).view({-1}).to(torch::kCUDA);
  const int s = 56;
  struct Case {
    double x, y, w, h;
    bool flip;
  };
  const std::vector<Case> cases = {
      {0, 0, double(img.width), double(img.height), false},  // whole image, downscale
      {10, 20, 30, 25, true},                                // small crop, upscale, flipped
      {img.width - 40.0, img.height - 33.0, 40, 33, false},  // touching the right/bottom edges
      {0, img.height - 100.0, 77, 100, true}};               // left/bottom edges, flipped
  for (bool channels_last : {false, true}) {
    for (const auto& c : cases) {
      INFO("box " << c.x << "," << c.y << " " << c.w << "x" << c.h << " flip " << c.flip
                  << " channels_last " << channels_last);
      std::vector<std::uint8_t> rgb(static_cast<std::size_t>(s) * s * 3);
      imagedata::resample_bilinear(img, imagedata::BoxF{c.x, c.y, c.w, c.h}, s, s, c.flip,
                                   rgb.data());
      std::vector<float> want(rgb.size());
      imagedata::normalize_imagenet(rgb.data(), s, s, channels_last, want.data());

      nvjpeg::CropJob job{0,          img.width,  img.height, float(c.x),        float(c.y),
                          float(c.w), float(c.h), c.flip,     nvjpeg::kCropRgbi, {}};
      auto job_dev = torch::from_blob(&job, {sizeof job}, torch::kUInt8).to(torch::kCUDA);
      auto out = torch::empty({1, 3, s, s}, torch::TensorOptions().device(torch::kCUDA));
      REQUIRE(nvjpeg::crop_resize_normalize(
                  reinterpret_cast<const nvjpeg::CropJob*>(job_dev.data_ptr<std::uint8_t>()), 1,
                  dev_pixels.data_ptr<std::uint8_t>(), s, channels_last, out.data_ptr<float>(),
                  current_stream()) == cudaSuccess);
      auto got = out.cpu().view({-1});
      auto expected =
          torch::from_blob(want.data(), {static_cast<std::int64_t>(want.size())}).clone();
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

// The crop kernel's launcher reads cudaGetLastError() after its launch, which would also report
// an error an earlier runtime call left unread in the thread (see orch/cuda_launch.h). The
// launcher drops what is pending before it launches; this test leaves an error pending on
// purpose, in a fresh thread as the producer is, and expects the launch to succeed and to have
// written the batch.
TEST_CASE("the crop kernel's launch check is not fooled by an error an earlier call left pending",
          "[gpu][nvjpeg]") {
  const auto file = imagedata::encode_jpeg(imagedata::render_image(5, 1, 3), 90);
  const imagedata::RgbImage img = imagedata::decode_jpeg(file.data(), file.size());
  const auto dev_pixels = as_tensor(img).view({-1}).to(torch::kCUDA);
  nvjpeg::CropJob job{
      0,     img.width,         img.height, 0.f, 0.f, float(img.width), float(img.height),
      false, nvjpeg::kCropRgbi, {}};
  auto job_dev = torch::from_blob(&job, {sizeof job}, torch::kUInt8).to(torch::kCUDA);
  auto out =
      torch::full({1, 3, 32, 32}, std::nanf(""), torch::TensorOptions().device(torch::kCUDA));
  const cudaStream_t stream = current_stream();
  cudaError_t pending = cudaSuccess, launched = cudaErrorUnknown, after = cudaErrorUnknown;
  std::thread([&] {
    // Not a kernel: the runtime answers cudaErrorInvalidDeviceFunction and keeps it pending.
    static int not_a_kernel = 0;
    cudaFuncAttributes attr{};
    (void)cudaFuncGetAttributes(&attr, &not_a_kernel);
    pending = cudaPeekAtLastError();
    launched = nvjpeg::crop_resize_normalize(
        reinterpret_cast<const nvjpeg::CropJob*>(job_dev.data_ptr<std::uint8_t>()), 1,
        dev_pixels.data_ptr<std::uint8_t>(), 32, false, out.data_ptr<float>(), stream);
    after = cudaStreamSynchronize(stream);
  }).join();
  REQUIRE(pending != cudaSuccess);  // the set-up did leave an error pending
  CHECK(launched == cudaSuccess);
  CHECK(after == cudaSuccess);
  CHECK(torch::isfinite(out).all().item<bool>());  // the kernel ran and wrote every value
}

TEST_CASE("output yuv: nvJPEG's planes converted by the crop kernel give the RGB path's pixels",
          "[gpu][nvjpeg][yuv]") {
  // The same files decoded to interleaved RGB and to Y, Cb, Cr planes by the same backend: the
  // planes converted (ycc_pixel_rgb, libjpeg's arithmetic with plain upsampling) must give
  // nvJPEG's own RGB, and the crop kernel the same batch from either. Exactly on the JPEG
  // engines (their RGB is libjpeg-turbo's); the CUDA decoder within the first test's bounds.
  const Files files = sampled_files();
  std::vector<imagedata::RgbImage> plain;
  for (const auto& f : files) plain.push_back(imagedata::decode_jpeg(f.data(), f.size(), false));
  for (const char* backend : {"auto", "gpu"}) {
    nvjpeg::Decoder rgb_decoder(backend), yuv_decoder(backend, nullptr, nvjpeg::Output::kYuv);
    REQUIRE(yuv_decoder.hardware() == rgb_decoder.hardware());
    const bool exact = rgb_decoder.hardware();
    INFO("backend " << backend << " -> " << rgb_decoder.backend_name());
    const DeviceImages rgbi = decode_on_device(rgb_decoder, files);
    const DeviceImages ycc = decode_on_device(yuv_decoder, files);
    std::cout << "nvjpeg " << rgb_decoder.backend_name()
              << ": decoded one at a time (not batched): rgb " << rgb_decoder.single_decodes()
              << ", yuv " << yuv_decoder.single_decodes() << " of " << files.size() << "\n";
    const auto from_rgbi = to_rgb(rgbi), from_planes = to_rgb(ycc);
    for (std::size_t i = 0; i < files.size(); ++i) {
      INFO("image " << i << " (" << ycc.infos[i].width << "x" << ycc.infos[i].height << ", "
                    << ycc.infos[i].components << " components, subsampling "
                    << ycc.infos[i].subsampling << ")");
      CHECK(ycc.layout.ycc[i]);  // every one of these is decoded to planes
      const auto diff = (from_planes[i].to(torch::kInt32) - from_rgbi[i].to(torch::kInt32)).abs();
      const auto vs_libjpeg =
          (from_planes[i].to(torch::kInt32) - as_tensor(plain[i]).to(torch::kInt32)).abs();
      std::cout << "nvjpeg " << rgb_decoder.backend_name() << " image " << i
                << ": planes converted vs RGBI: max " << diff.max().item<int>()
                << ", differing share " << (diff > 0).to(torch::kFloat64).mean().item<double>()
                << "; vs libjpeg-turbo plain: max " << vs_libjpeg.max().item<int>() << "\n";
      if (exact)
        CHECK(torch::equal(from_planes[i], from_rgbi[i]));
      else
        check_close_levels(diff.to(torch::kFloat32),
                           std::string("planes vs RGBI, image ") + std::to_string(i));
    }
    // The crop kernel on both buffers with the same boxes: whole images, small upscaled crops,
    // crops touching the right and bottom edges (odd sizes: the last chroma column and row).
    std::vector<Box> boxes;
    for (std::size_t i = 0; i < files.size(); ++i) {
      const float w = static_cast<float>(ycc.infos[i].width),
                  h = static_cast<float>(ycc.infos[i].height);
      boxes.push_back({i, 0, 0, w, h, false});
      boxes.push_back({i, 10, 20, 30, 25, true});
      boxes.push_back({i, w - 40, h - 33, 40, 33, false});
      boxes.push_back({i, 0, h - 100, 77, 100, true});
      boxes.push_back({i, 0.5f, 0.25f, w - 1.5f, h - 0.75f, i % 2 == 0});
    }
    for (bool channels_last : {false, true}) {
      INFO("channels_last " << channels_last);
      const auto a = crop_on_device(rgbi, boxes, 56, channels_last).cpu();
      const auto b = crop_on_device(ycc, boxes, 56, channels_last).cpu();
      if (exact)
        CHECK(torch::equal(a, b));
      else
        check_close_levels(level_diff(a, b),
                           std::string("crop kernel, yuv vs rgb, ") + rgb_decoder.backend_name());
    }
  }
}

TEST_CASE("nvjpeg loader: device batches, deterministic, the imagefolder loader's crops",
          "[gpu][nvjpeg]") {
  const std::string root = (dataset_dir() / "data").string();
  // a: the defaults (one decoder, PyTorch's allocator); b: nvJPEG's own allocator and one
  // batch ahead; d: three decoders with preallocated buffers. Batches must come back the
  // same, in the same order, whichever producer made them and wherever its buffers came from.
  auto a = make_loader("nvjpeg", {{"root", root}}, 1);
  auto b = make_loader("nvjpeg",
                       {{"root", root},
                        {"decoders", std::int64_t{1}},
                        {"prefetch", std::int64_t{1}},
                        {"allocator", std::string("cuda")}},
                       1);
  auto d = make_loader(
      "nvjpeg", {{"root", root}, {"decoders", std::int64_t{3}}, {"hw_preallocate", true}}, 1);
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
  INFO("mean |nvjpeg - imagefolder|: same seed " << same_seed / 6 << ", other seed "
                                                 << other_seed / 6);
  std::cout << "nvjpeg vs imagefolder, mean |diff| per batch: same seed " << same_seed / 6
            << ", other seed " << other_seed / 6 << "\n";
  CHECK(same_seed < 0.35 * other_seed);
  const auto counters = a->counters();
  CHECK(counters.at("images") >= 48);
  CHECK(counters.at("bytes_read") > 0);
  CHECK(counters.at("skipped") == 0);
  CHECK(counters.count("hardware_decode") == 1);
  CHECK((counters.at("hw_engines") > 0) == (counters.at("hardware_decode") == 1.0));
  // decode_ms split: time inside nvJPEG's calls and waiting for the GPU at the end, both
  // parts of it (measured inside it), both non-zero for batches that were decoded.
  CHECK(counters.at("decode_nvjpeg_ms") > 0);
  CHECK(counters.at("decode_gpu_wait_ms") > 0);
  CHECK(counters.at("decode_nvjpeg_ms") + counters.at("decode_gpu_wait_ms") <=
        counters.at("decode_ms"));
  // ... and decode_nvjpeg_ms split by the decoder: header checks (on the engines only), the
  // batched call, single decodes (none in this folder of baseline JPEGs); measured inside it.
  CHECK(counters.at("decode_nvjpeg_batched_ms") > 0);
  CHECK(counters.at("decode_nvjpeg_single_ms") == 0);
  CHECK(counters.at("decode_nvjpeg_check_ms") + counters.at("decode_nvjpeg_batched_ms") +
            counters.at("decode_nvjpeg_single_ms") <=
        counters.at("decode_nvjpeg_ms"));
}

TEST_CASE("nvjpeg loader: cpu_share decodes each batch's last rows on the CPU, as imagefolder does",
          "[gpu][nvjpeg][cpu_share]") {
  const std::string root = (dataset_dir() / "data").string();
  // Batches of 8: cpu_share 0.4 sends round(3.2) = 3 rows to the CPU, 1.0 all of them.
  auto gpu = make_loader("nvjpeg", {{"root", root}}, 1);
  auto part =
      make_loader("nvjpeg", {{"root", root}, {"cpu_share", 0.4}, {"workers", std::int64_t{3}}}, 1);
  auto all = make_loader("nvjpeg", {{"root", root}, {"cpu_share", 1.0}}, 1);
  auto cpu = make_loader("imagefolder", {{"root", root}, {"workers", std::int64_t{2}}}, 1);
  for (int i = 0; i < 6; ++i) {  // crosses into the second epoch
    INFO("batch " << i);
    const Batch g = gpu->next(), p = part->next(), a = all->next(), c = cpu->next();
    torch::cuda::synchronize();
    REQUIRE(p.images.is_cuda());
    REQUIRE(a.images.is_cuda());
    CHECK(p.images.sizes() == g.images.sizes());
    CHECK(p.images.is_contiguous(at::MemoryFormat::ChannelsLast));
    CHECK(torch::equal(p.labels, g.labels));
    // nvJPEG's rows as the GPU-only loader makes them, the CPU's as imagefolder makes them.
    CHECK(torch::equal(p.images.narrow(0, 0, 5), g.images.narrow(0, 0, 5)));
    CHECK(torch::equal(p.images.narrow(0, 5, 3).cpu(), c.images.narrow(0, 5, 3).cpu()));
    CHECK_FALSE(torch::equal(p.images.narrow(0, 5, 3), g.images.narrow(0, 5, 3)));
    CHECK(torch::equal(a.images.cpu(), c.images.cpu()));
    CHECK(torch::equal(a.labels.cpu(), c.labels.cpu()));
  }
  // Counted per batch made (a producer may be ahead of the loop).
  const auto pc = part->counters(), ac = all->counters(), gc = gpu->counters();
  CHECK(pc.at("cpu_decodes") * 8 == pc.at("images") * 3);
  CHECK(pc.at("cpu_decode_ms") > 0);
  CHECK(ac.at("cpu_decodes") == ac.at("images"));
  CHECK(ac.at("decode_nvjpeg_ms") == 0);  // nvJPEG never called
  CHECK(gc.at("cpu_decodes") == 0);
  CHECK(gc.at("cpu_decode_ms") == 0);
}

TEST_CASE("nvjpeg loader: output yuv gives output rgb's batches", "[gpu][nvjpeg][yuv]") {
  // A folder of 4:2:0, 4:4:4, 4:2:2 and grayscale JPEGs at odd sizes; the same seed through
  // both outputs: the same samples, crops and pixels (exactly on the JPEG engines).
  test::TempDir tmp;
  const test::Sampling kinds[] = {test::kS420, test::kS444, test::kS422, test::kGray};
  const auto odd = [](int n, int less) {
    const int m = n - less;
    return m % 2 ? m : m - 1;
  };
  for (int c = 0; c < 2; ++c) {
    const auto dir = tmp.path() / "data" / "train" / imagedata::class_folder_name(c);
    std::filesystem::create_directories(dir);
    for (int i = 0; i < 8; ++i) {
      const imagedata::RgbImage img = imagedata::render_image(7, c, i);
      const auto file =
          test::encode_sampled(test::crop_rgb(img, odd(img.width, 6 * i), odd(img.height, 5 * i)),
                               90, kinds[(c + i) % 4]);
      std::ofstream(dir / ("img_" + std::to_string(i) + ".JPEG"), std::ios::binary)
          .write(reinterpret_cast<const char*>(file.data()),
                 static_cast<std::streamsize>(file.size()));
    }
  }
  const std::string root = (tmp.path() / "data").string();
  for (const char* backend : {"auto", "gpu"}) {
    auto rgb = make_loader("nvjpeg", {{"root", root}, {"backend", std::string(backend)}}, 3);
    auto yuv = make_loader(
        "nvjpeg",
        {{"root", root}, {"backend", std::string(backend)}, {"output", std::string("yuv")}}, 3);
    const bool exact = rgb->counters().at("hardware_decode") == 1.0;
    INFO("backend " << backend << (exact ? " (hardware)" : " (CUDA decoder)"));
    // 16 images in batches of 8: two epochs.
    for (int k = 0; k < 4; ++k) {
      const Batch x = rgb->next(), y = yuv->next();
      torch::cuda::synchronize();
      INFO("batch " << k);
      CHECK(torch::equal(x.labels, y.labels));
      CHECK(y.images.sizes() == x.images.sizes());
      CHECK(y.images.is_contiguous(at::MemoryFormat::ChannelsLast));
      if (exact)
        CHECK(torch::equal(x.images, y.images));
      else
        check_close_levels(level_diff(x.images, y.images),
                           std::string("loader batch ") + std::to_string(k) + ", yuv vs rgb");
    }
    const auto a = rgb->counters(), b = yuv->counters();
    std::cout << "nvjpeg loader " << backend << ": single decodes rgb " << a.at("single_decodes")
              << ", yuv " << b.at("single_decodes") << "; decode_ms rgb " << a.at("decode_ms")
              << ", yuv " << b.at("decode_ms") << "\n";
    CHECK(b.at("images") >= 32);  // what each producer made so far (it may be ahead)
    CHECK(b.at("skipped") == 0);
    CHECK(b.at("hardware_decode") == a.at("hardware_decode"));
  }
}

TEST_CASE("nvjpeg loader: a corrupt file fails the run naming it, or is skipped and counted",
          "[gpu][nvjpeg]") {
  test::TempDir tmp;
  imagedata::GeneratorOptions o;
  o.classes = 2;
  o.per_class = 8;
  imagedata::make_dataset(tmp.path() / "data", o);
  const auto index = imagedata::scan_image_folder(tmp.path() / "data");
  const auto garbage = index.samples[3].path;
  std::ofstream(garbage, std::ios::binary | std::ios::trunc) << "not a jpeg, just text";
  const std::string root = (tmp.path() / "data").string();
  // cpu_share 0.5: two of each batch's four images are decoded on the CPU, where the garbage
  // file lands in some epochs; the same errors either way.
  for (const double share : {0.0, 0.5}) {
    INFO("cpu_share " << share);
    {
      auto loader = make_loader("nvjpeg", {{"root", root}, {"cpu_share", share}}, 1, 4);
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
      auto loader = make_loader(
          "nvjpeg", {{"root", root}, {"on_error", std::string("skip")}, {"cpu_share", share}}, 1,
          4);
      for (int i = 0; i < 8; ++i) {
        const Batch b = loader->next();
        CHECK(b.images.size(0) == 4);
      }
      torch::cuda::synchronize();
      CHECK(loader->counters().at("skipped") >= 2);  // once per epoch
    }
  }
  // A truncated file: its header parses, its data ends early. Whatever nvJPEG makes of it (an
  // error, or a partly grey image as libjpeg-turbo does), the loader must not crash.
  const auto truncated = index.samples[5].path;
  auto bytes = imagedata::read_file(truncated);
  std::ofstream(truncated, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size() / 2));
  auto loader = make_loader("nvjpeg", {{"root", root}, {"on_error", std::string("skip")}}, 1, 4);
  for (int i = 0; i < 8; ++i) loader->next();
  torch::cuda::synchronize();
  std::cout << "nvjpeg with one garbage and one truncated file, on_error skip: skipped "
            << loader->counters().at("skipped") << " in 2 epochs\n";
  CHECK(loader->counters().at("skipped") >= 2);
}

TEST_CASE("nvjpeg loader: PNG and CMYK files are decoded on the CPU, as imagefolder does",
          "[gpu][nvjpeg][fallback]") {
  test::TempDir tmp;
  imagedata::GeneratorOptions o;
  o.classes = 2;
  o.per_class = 8;
  imagedata::make_dataset(tmp.path() / "data", o);
  const auto index = imagedata::scan_image_folder(tmp.path() / "data");
  // Sample 2 becomes PNG data under its .JPEG name (as ImageNet's one PNG), sample 5 a CMYK JPEG.
  const imagedata::RgbImage img = imagedata::render_image(0, 0, 2);
  const auto png =
      imagedata::test::write_png(img.width, img.height, PNG_COLOR_TYPE_RGB, 8, img.pixels);
  std::ofstream(index.samples[2].path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  const auto cmyk = imagedata::test::write_jpeg(320, 240, imagedata::test::pattern(320, 240, 4),
                                                {JCS_CMYK, JCS_CMYK});
  std::ofstream(index.samples[5].path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(cmyk.data()), static_cast<std::streamsize>(cmyk.size()));
  const std::string root = (tmp.path() / "data").string();
  // No shuffle: batch 0 holds samples 0..7 in order, so rows 2 and 5 are the two files.
  auto gpu = make_loader("nvjpeg", {{"root", root}, {"shuffle", false}}, 1);
  auto cpu = make_loader("imagefolder", {{"root", root}, {"shuffle", false}}, 1);
  const Batch g = gpu->next(), c = cpu->next();
  torch::cuda::synchronize();
  CHECK(torch::equal(g.labels.cpu(), c.labels.cpu()));
  for (const std::int64_t row : {2, 5}) {
    INFO("row " << row);
    CHECK(torch::equal(g.images.narrow(0, row, 1).cpu(), c.images.narrow(0, row, 1).cpu()));
  }
  // The other rows are nvJPEG's: close to imagefolder's, not equal (chroma upsampling differs).
  CHECK_FALSE(torch::equal(g.images.narrow(0, 0, 1).cpu(), c.images.narrow(0, 0, 1).cpu()));
  const auto k = gpu->counters();
  CHECK(k.at("cpu_fallback") >= 2);
  CHECK(k.at("cpu_fallback.png") >= 1);
  CHECK(k.at("cpu_fallback.cmyk") >= 1);
  CHECK(k.at("skipped") == 0);
}

TEST_CASE("a ResNet run trains from the nvjpeg loader", "[gpu][nvjpeg]") {
  // Eager, and captured in a CUDA graph while the loader's threads keep calling CUDA (a
  // global-mode capture fails on that: the decoders synchronise and allocate during it; the
  // cuda-graph strategy captures in thread-local mode).
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
