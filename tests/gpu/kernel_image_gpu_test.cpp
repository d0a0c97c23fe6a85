// orch's own CUDA kernels on the GPU at hand: the run-time check (<orch/kernel_image.h>) agrees
// with what the build holds (CMAKE_CUDA_ARCHITECTURES, judged by telemetry/kernel_coverage.h),
// and where the kernels cannot run (the test hook ORCH_TEST_PRETEND_NO_KERNEL_IMAGE=1, or a
// build without an image or PTX for this GPU) a fused ResNet run takes ATen's and cuDNN's
// operations, counts the reason and still trains. Run on builds for other architecture lists
// (docs/gpu-machine.md), the same cases check PTX-only and image-less builds.
#include <ATen/cuda/CUDAContext.h>
#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "gpu/gpu_env_support.h"
#include "integration/test_support.h"
#include "kernel_availability.h"
#include "runner/runner.h"
#include "telemetry/kernel_coverage.h"

#ifdef ORCH_TEST_NVJPEG
#include <orch/kernel_image.h>

#include "crop_resize.h"
#endif

using namespace orch;

namespace {

// tests/CMakeLists.txt: the build's CMAKE_CUDA_ARCHITECTURES, commas for semicolons.
CoverageDecision this_build_on_this_gpu() {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(0);
  return kernel_coverage(parse_cuda_architectures(ORCH_CUDA_ARCHITECTURES), p->major, p->minor);
}

int device_cc() {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(0);
  return p->major * 10 + p->minor;
}

// A fused ResNet18 under bf16 autocast, channels-last, our kernels asked for everywhere.
RunSpec fused_spec() {
  RunSpec spec = test::small_cpu_spec();
  spec.device = "cuda";
  spec.model = test::choice("resnet", {{"depth", std::int64_t{18}},
                                       {"fused_bn", true},
                                       {"fused_bn_impl", std::string("orch")},
                                       {"max_pool_impl", std::string("orch")}});
  spec.precision = test::choice("amp", {{"dtype", std::string("bf16")}});
  spec.memory_format = "channels_last";
  spec.measure_steps = 20;
  return spec;
}

double counter(const nlohmann::json& doc, const std::string& name) {
  const auto& c = doc["counters"];
  return c.contains(name) ? c[name].get<double>() : 0.0;
}

}  // namespace

TEST_CASE("the run-time kernel check agrees with the architectures the build holds",
          "[gpu][kernels]") {
  const CoverageDecision d = this_build_on_this_gpu();
  INFO("built for " << ORCH_CUDA_ARCHITECTURES << ", GPU " << device_cc() << ": "
                    << to_string(d.coverage));
  for (const auto op : {resnet::OwnKernels::kFusedBn, resnet::OwnKernels::kMaxPool}) {
    const std::string reason = resnet::own_kernels_unavailable_reason(op, 0);
    const auto v = resnet::own_kernel_versions(op, 0);
    INFO("reason '" << reason << "', binaryVersion " << v.binary_version << ", ptxVersion "
                    << v.ptx_version);
    switch (d.coverage) {
      case KernelCoverage::kNative:
        CHECK(reason.empty());
        CHECK(v.binary_version == d.used->number());
        break;
      case KernelCoverage::kPtxJit:
        // The driver compiled the PTX for this GPU.
        CHECK(reason.empty());
        CHECK(v.binary_version == device_cc());
        CHECK(v.ptx_version == d.used->number());
        break;
      case KernelCoverage::kNone:
        CHECK(reason == "no_kernel_image");
        break;
      case KernelCoverage::kTooOld:
        CHECK(reason == "compute_capability");
        break;
      case KernelCoverage::kNotBuilt:
        CHECK(reason == "not_built");
        break;
    }
  }
#ifdef ORCH_TEST_NVJPEG
  {
    // The nvjpeg loader's crop kernel, asked the same way by the plugin.
    KernelImageCache crop(&nvjpeg::crop_resize_attributes);
    const KernelImage& image = crop.get(0);
    INFO("crop kernel: " << image.reason << " " << image.detail);
    const bool expected =
        d.coverage == KernelCoverage::kNative || d.coverage == KernelCoverage::kPtxJit;
    CHECK(image.runnable == expected);
    if (d.coverage == KernelCoverage::kNative) CHECK(image.binary_version == d.used->number());
    if (d.coverage == KernelCoverage::kNone) CHECK(image.reason == "no_kernel_image");
  }
#endif
  {
    // The hook answers no without asking CUDA, and leaves the cached answer alone.
    const test::ScopedEnv pretend("ORCH_TEST_PRETEND_NO_KERNEL_IMAGE", "1");
    CHECK(resnet::own_kernels_unavailable_reason(resnet::OwnKernels::kFusedBn, 0) ==
          "no_kernel_image");
  }
  if (d.coverage == KernelCoverage::kNative || d.coverage == KernelCoverage::kPtxJit) {
    CHECK(resnet::own_kernels_unavailable_reason(resnet::OwnKernels::kFusedBn, 0).empty());
  }
}

TEST_CASE("without a kernel image a fused ResNet falls back, counted with the reason, and trains",
          "[gpu][kernels]") {
  const CoverageDecision d = this_build_on_this_gpu();
  const bool runnable =
      d.coverage == KernelCoverage::kNative || d.coverage == KernelCoverage::kPtxJit;
  // Pretended (the hook) on any build; on a build without an image or PTX for this GPU, also
  // for real.
  for (const bool pretend : {true, false}) {
    INFO((pretend ? "ORCH_TEST_PRETEND_NO_KERNEL_IMAGE=1" : "no hook")
         << ", built for " << ORCH_CUDA_ARCHITECTURES);
    std::optional<test::ScopedEnv> hook;
    if (pretend) hook.emplace("ORCH_TEST_PRETEND_NO_KERNEL_IMAGE", "1");
    const auto doc = run_one(fused_spec(), test::built_plugins());
    INFO(doc["counters"].dump(2) << "\n" << doc.value("error", std::string()));
    REQUIRE(doc["status"] == "ok");
    const auto& m = doc["metrics"];
    CHECK(m["loss_last"].get<double>() < 0.5 * m["loss_first"].get<double>());
    if (pretend || !runnable) {
      const std::string reason = d.coverage == KernelCoverage::kTooOld && !pretend
                                     ? "compute_capability"
                                     : "no_kernel_image";
      CHECK(counter(doc, "model.fused_bn.kernel_unavailable." + reason) > 0);
      CHECK(counter(doc, "model.max_pool.kernel_unavailable." + reason) > 0);
      CHECK(counter(doc, "model.fused_bn.orch") == 0);
      CHECK(counter(doc, "model.max_pool.orch") == 0);
      CHECK(counter(doc, "model.fused_bn.unfused") > 0);
      CHECK(counter(doc, "model.max_pool.aten") > 0);
    } else {
      CHECK(counter(doc, "model.fused_bn.orch") > 0);
      CHECK(counter(doc, "model.max_pool.orch") > 0);
      for (const auto& [name, value] : doc["counters"].items()) {
        INFO(name);
        CHECK(name.find("kernel_unavailable") == std::string::npos);
      }
    }
  }
}

TEST_CASE("with ORCH_GPU_MEMORY_CAP=24GiB a fused ResNet50 at batch 256 in fp16 fits under it",
          "[gpu][memory_cap]") {
  const std::int64_t cap = 24LL << 30;
  const std::int64_t total =
      static_cast<std::int64_t>(at::cuda::getDeviceProperties(0)->totalGlobalMem);
  if (total <= cap) {
    WARN("the GPU has no more than 24 GiB: nothing to cap, nothing checked");
    return;
  }
  RunSpec spec = test::small_cpu_spec();
  spec.device = "cuda";
  spec.model = test::choice("resnet", {{"depth", std::int64_t{50}}, {"fused_bn", true}});
  spec.data = test::choice("synthetic", {{"image_size", std::int64_t{224}},
                                         {"channels", std::int64_t{3}},
                                         {"classes", std::int64_t{1000}},
                                         {"batches", std::int64_t{1}},
                                         {"location", std::string("device")}});
  spec.precision = test::choice("amp", {{"dtype", std::string("fp16")}});
  spec.memory_format = "channels_last";
  spec.batch_size = 256;
  spec.warmup_steps = 3;
  spec.measure_steps = 5;
  {
    const test::ScopedEnv capped("ORCH_GPU_MEMORY_CAP", "24GiB");
    const auto doc = run_one(spec, test::built_plugins());
    INFO(doc.value("error", std::string()));
    REQUIRE(doc["status"] == "ok");
    CHECK(doc["environment"]["gpu_memory_cap_bytes"] == cap);
    CHECK(doc["environment"]["variables"]["ORCH_GPU_MEMORY_CAP"] == "24GiB");
    const auto peak = doc["metrics"]["peak_reserved_bytes"].get<std::int64_t>();
    INFO("peak reserved " << peak / double(1 << 30) << " GiB");
    CHECK(peak > 0);
    CHECK(peak <= cap);
  }
  {
    // The cap is in force: far below what the step needs, the same run runs out of memory.
    const test::ScopedEnv capped("ORCH_GPU_MEMORY_CAP", "2GiB");
    const auto doc = run_one(spec, test::built_plugins());
    CHECK(doc["status"] == "oom");
  }
  // Uncapped again once the variable is gone: the runner resets the fraction, so the run
  // that ran out of memory under 2 GiB fits.
  const auto doc = run_one(spec, test::built_plugins());
  CHECK(doc["status"] == "ok");
  CHECK_FALSE(doc["environment"].contains("gpu_memory_cap_bytes"));
  CHECK(doc["metrics"]["peak_reserved_bytes"].get<std::int64_t>() > (2LL << 30));
}
