// Whether the resnet operations' own CUDA kernels (fused_bn_kernels.cu, max_pool_kernels.cu)
// run on a tensor's device: asked of CUDA once per device (<orch/kernel_image.h>), because a
// build covers some GPU architectures only (CMAKE_CUDA_ARCHITECTURES) and a launch on another
// would fail. Where they do not run, the operations take ATen's or cuDNN's path instead; each
// such call is counted under its reason, and the first is named on stderr.
#pragma once

#include <torch/types.h>

#include <map>
#include <string>

namespace orch::resnet {

enum class OwnKernels { kFusedBn, kMaxPool };

/// True where `op`'s kernels run on x's CUDA device; false otherwise (CPU, a build without
/// them, or the device check failed), counting the call under the reason when the check failed.
bool own_kernels_run_on(OwnKernels op, const torch::Tensor& x);

/// The same check without counting: "" where they run, else the reason ("no_kernel_image",
/// "compute_capability", "ptx_unsupported", "cuda_error", "not_built").
std::string own_kernels_unavailable_reason(OwnKernels op, int device);

/// What CUDA reports for `op`'s kernels on `device` (image and PTX versions): for the tests.
struct OwnKernelVersions {
  int binary_version = 0, ptx_version = 0;
};
OwnKernelVersions own_kernel_versions(OwnKernels op, int device);

/// "fused_bn.kernel_unavailable.<reason>" and "max_pool.kernel_unavailable.<reason>": calls
/// that wanted our kernels and ran ATen's or cuDNN's path, every key present (zeros included).
std::map<std::string, double> kernel_unavailable_counts();

}  // namespace orch::resnet
