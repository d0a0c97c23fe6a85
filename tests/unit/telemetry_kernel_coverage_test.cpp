// Whether orch's kernels cover a GPU, from the architectures a build holds and the GPU's compute
// capability (CUDA's compatibility rules), and what `orch doctor` says about it.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "telemetry/doctor.h"
#include "telemetry/kernel_coverage.h"

namespace orch {
namespace {

// The default build's list on CUDA 13 (cmake/orch_cuda_arch.cmake).
const std::string kDefault = "80-real;86-real;89-real;90-real;100-real;120";

CoverageDecision cover(const std::string& list, int major, int minor) {
  return kernel_coverage(parse_cuda_architectures(list), major, minor);
}

TEST_CASE("kernel coverage: CMake's architecture spellings parse", "[telemetry][kernels]") {
  const auto a = parse_cuda_architectures("80-real;90;120-virtual;90a-real,100f");
  REQUIRE(a.size() == 5);
  CHECK((a[0].major == 8 && a[0].minor == 0 && a[0].real && !a[0].virtual_));
  CHECK((a[1].number() == 90 && a[1].real && a[1].virtual_));
  CHECK((a[2].number() == 120 && !a[2].real && a[2].virtual_));
  CHECK((a[3].number() == 90 && a[3].variant == 'a' && a[3].real && !a[3].virtual_));
  CHECK((a[4].number() == 100 && a[4].variant == 'f' && a[4].real && a[4].virtual_));
  CHECK(parse_cuda_architectures("").empty());
  CHECK_THROWS_WITH(parse_cuda_architectures("80;native"),
                    Catch::Contains("'native'") && Catch::Contains("NN-real"));
  CHECK_THROWS_AS(parse_cuda_architectures("sm_90"), std::invalid_argument);
  CHECK(describe_architectures(parse_cuda_architectures(kDefault)) ==
        "sm_80, sm_86, sm_89, sm_90, sm_100, sm_120, PTX compute_120");
  CHECK(describe_architectures({}) == "none");
}

TEST_CASE(
    "kernel coverage: the default build runs natively on every card it names and its "
    "relatives",
    "[telemetry][kernels]") {
  struct Case {
    int major, minor, image;
  };
  // A100, RTX 3090, Jetson Orin (8.7 runs 8.6's image), RTX 4090, H200, B200, B300 (10.3 runs
  // 10.0's), RTX 5090, DGX Spark (12.1 runs 12.0's).
  for (const Case c :
       {Case{8, 0, 80}, Case{8, 6, 86}, Case{8, 7, 86}, Case{8, 9, 89}, Case{9, 0, 90},
        Case{10, 0, 100}, Case{10, 3, 100}, Case{12, 0, 120}, Case{12, 1, 120}}) {
    INFO(c.major << "." << c.minor);
    const auto d = cover(kDefault, c.major, c.minor);
    CHECK(d.coverage == KernelCoverage::kNative);
    REQUIRE(d.used);
    CHECK(d.used->number() == c.image);
  }
}

TEST_CASE("kernel coverage: PTX is compiled for newer cards, never older ones",
          "[telemetry][kernels]") {
  // A future 13.0 card, and 11.0 (Jetson Thor, no image of its family): PTX of 12.0 runs on
  // the first only.
  auto d = cover(kDefault, 13, 0);
  CHECK(d.coverage == KernelCoverage::kPtxJit);
  REQUIRE(d.used);
  CHECK(d.used->number() == 120);
  CHECK(cover(kDefault, 11, 0).coverage == KernelCoverage::kNone);

  // The GPU machine's PTX-only build: compute_80 for the H200.
  d = cover("80-virtual", 9, 0);
  CHECK(d.coverage == KernelCoverage::kPtxJit);
  REQUIRE(d.used);
  CHECK(d.used->number() == 80);
  // The newest PTX that is not newer than the device is the one used.
  d = cover("80-virtual;89-virtual;100-virtual", 9, 0);
  CHECK(d.coverage == KernelCoverage::kPtxJit);
  CHECK(d.used->number() == 89);
  // An image of the family wins over PTX.
  d = cover("86-real;89-virtual", 8, 9);
  CHECK(d.coverage == KernelCoverage::kNative);
  CHECK(d.used->number() == 86);
}

TEST_CASE("kernel coverage: no image of the device's family and no usable PTX is none",
          "[telemetry][kernels]") {
  // The GPU machine's image-only build for 8.0: the H200 (9.0) has neither.
  CHECK(cover("80-real", 9, 0).coverage == KernelCoverage::kNone);
  // Machine code does not cross major versions, nor run on a lower minor one.
  CHECK(cover("90-real", 10, 0).coverage == KernelCoverage::kNone);
  CHECK(cover("89-real", 8, 6).coverage == KernelCoverage::kNone);
  // "a" variants: the image runs on that exact architecture, its PTX nowhere else.
  CHECK(cover("90a-real", 9, 0).coverage == KernelCoverage::kNative);
  CHECK(cover("100a-real", 10, 3).coverage == KernelCoverage::kNone);
  CHECK(cover("90a-virtual", 10, 0).coverage == KernelCoverage::kNone);
  // "f" (family) variants run across the family, not beyond it.
  CHECK(cover("100f-real", 10, 3).coverage == KernelCoverage::kNative);
  CHECK(cover("100f-virtual", 12, 0).coverage == KernelCoverage::kNone);
  CHECK(cover("100f-virtual", 10, 3).coverage == KernelCoverage::kPtxJit);
}

TEST_CASE("kernel coverage: cards older than 8.0 and builds without kernels",
          "[telemetry][kernels]") {
  // A T4 (7.5) even with PTX that would compile for it: the kernels need 8.0.
  CHECK(cover(kDefault, 7, 5).coverage == KernelCoverage::kTooOld);
  CHECK(cover("", 9, 0).coverage == KernelCoverage::kNotBuilt);
}

DoctorFacts one_gpu(const std::string& archs, int major, int minor) {
  DoctorFacts f;
  f.cuda_available = true;
  f.nvml_available = false;
  f.nvml_reason = "not needed here";
  DoctorGpu g;
  g.name = "NVIDIA H200";
  g.pci_bus_id = "0000:3b:00.0";
  g.cc_major = major;
  g.cc_minor = minor;
  f.gpus.push_back(g);
  f.kernel_architectures = archs;
  return f;
}

std::vector<Finding> kernel_findings(const DoctorFacts& f) {
  std::vector<Finding> out;
  for (const Finding& x : doctor_checks(f)) {
    if (x.check == "kernels") out.push_back(x);
  }
  return out;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("doctor: reports the compute capability and whether orch's kernels cover it",
          "[telemetry][doctor][kernels]") {
  SECTION("native") {
    const auto k = kernel_findings(one_gpu(kDefault, 9, 0));
    REQUIRE(k.size() == 1);
    CHECK(k[0].severity == Severity::kOk);
    CHECK(has(k[0].message, "cuda:0 (NVIDIA H200, 0000:3b:00.0): compute capability 9.0"));
    CHECK(has(k[0].message, "run natively (sm_90 image"));
    CHECK(has(k[0].message, "sm_80, sm_86, sm_89, sm_90, sm_100, sm_120, PTX compute_120"));
  }
  SECTION("PTX") {
    const DoctorFacts f = one_gpu("80-virtual", 9, 0);
    const auto k = kernel_findings(f);
    REQUIRE(k.size() == 1);
    CHECK(k[0].severity == Severity::kOk);
    CHECK(has(k[0].message, "no image for it, orch's kernels run from PTX compute_80"));
    CHECK(has(k[0].advice, "-DCMAKE_CUDA_ARCHITECTURES=90"));
    const auto j = doctor_json(f, doctor_checks(f));
    CHECK(j["facts"]["gpus"][0]["compute_capability"] == "9.0");
    CHECK(j["facts"]["kernel_architectures"] == "80-virtual");
  }
  SECTION("none: a warning naming the fallback and the rebuild") {
    const DoctorFacts f = one_gpu("80-real", 9, 0);
    const auto k = kernel_findings(f);
    REQUIRE(k.size() == 1);
    CHECK(k[0].severity == Severity::kWarning);
    CHECK(
        has(k[0].message, "neither an image nor PTX for it (orch's kernels are built for sm_80)"));
    CHECK(has(k[0].advice, "ATen's or cuDNN's operations instead"));
    CHECK(has(k[0].advice, "-DCMAKE_CUDA_ARCHITECTURES=\"80-real;90\""));
    const std::string text = format_findings(doctor_checks(f));
    CHECK(has(text, "warning  kernels"));
    CHECK(has(text, "-> fused_bn, max_pool_impl: orch and the nvjpeg loader's crop"));
    CHECK_FALSE(has_error(doctor_checks(f)));  // slower runs, not wrong ones
  }
  SECTION("too old, and not built") {
    auto k = kernel_findings(one_gpu(kDefault, 7, 5));
    REQUIRE(k.size() == 1);
    CHECK(k[0].severity == Severity::kWarning);
    CHECK(has(k[0].message, "compute capability 7.5: orch's kernels need compute capability 8.0"));
    k = kernel_findings(one_gpu("", 9, 0));
    REQUIRE(k.size() == 1);
    CHECK(has(k[0].message, "built without its CUDA kernels"));
  }
  SECTION("nothing said where the build's list or the GPU's capability is unknown") {
    DoctorFacts f = one_gpu(kDefault, 9, 0);
    f.kernel_architectures.reset();
    CHECK(kernel_findings(f).empty());
    f = one_gpu(kDefault, 0, 0);
    CHECK(kernel_findings(f).empty());
  }
}

}  // namespace
}  // namespace orch
