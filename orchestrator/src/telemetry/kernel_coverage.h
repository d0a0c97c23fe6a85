// Whether orch's CUDA kernels can run on a GPU, judged from the architectures the build compiled
// them for (CMAKE_CUDA_ARCHITECTURES, cmake/orch_cuda_arch.cmake) and the GPU's compute
// capability, by CUDA's compatibility rules: machine code for X.y runs on X.z with z >= y; PTX
// for X.y is compiled by the driver for any X'.z' >= X.y; the "a" (architecture-specific) and
// "f" (family) variants are not forward compatible as PTX, and "a" machine code runs on X.y
// alone. `orch doctor` says what it finds; the plugins check the same at run time by asking
// CUDA itself (<orch/kernel_image.h>), and the GPU tests check the two agree.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace orch {

/// One entry of a CMAKE_CUDA_ARCHITECTURES list: "90" (machine code and PTX), "90-real",
/// "90-virtual", "90a-real", "100f".
struct CudaArch {
  int major = 0, minor = 0;
  char variant = 0;       ///< 0, 'a' or 'f'
  bool real = false;      ///< machine code (an sm_XY image)
  bool virtual_ = false;  ///< PTX (compute_XY)
  int number() const { return major * 10 + minor; }
};

/// Parses a CMake list ("80-real;86-real;90", or with commas); throws std::invalid_argument naming
/// the entry that is not of the forms above. An empty string is an empty list (no kernels built).
std::vector<CudaArch> parse_cuda_architectures(const std::string& list);

/// The oldest compute capability orch's kernels are written for (bf16 arithmetic, cp.async).
inline constexpr int kKernelMinComputeCapability = 80;

enum class KernelCoverage {
  kNative,    ///< a machine-code image runs on the device
  kPtxJit,    ///< no image, but PTX the driver compiles for it (the first launch takes longer)
  kNone,      ///< neither: the plugins run ATen's / cuDNN's operations instead
  kTooOld,    ///< compute capability below kKernelMinComputeCapability: ATen's / cuDNN's
  kNotBuilt,  ///< the build has no kernels (no nvcc at build time)
};
const char* to_string(KernelCoverage c);  // "native" | "ptx_jit" | "none" | "too_old" | "not_built"

struct CoverageDecision {
  KernelCoverage coverage = KernelCoverage::kNone;
  std::optional<CudaArch> used;  ///< the image (kNative) or the PTX (kPtxJit) CUDA will load
};

/// What CUDA will load for a device of compute capability major.minor. Among images it takes
/// the newest that runs; without one, the newest PTX that the driver can compile for it.
CoverageDecision kernel_coverage(const std::vector<CudaArch>& built, int major, int minor);

/// "sm_80, sm_86, sm_90, PTX compute_120" for messages; "none" for an empty list.
std::string describe_architectures(const std::vector<CudaArch>& built);

}  // namespace orch
