#include "kernel_availability.h"

#include <array>
#include <atomic>
#include <iostream>
#include <mutex>

#ifdef ORCH_FUSED_BN_CUDA
#include <orch/kernel_image.h>

#include "fused_bn_kernels.h"
#include "max_pool_kernels.h"
#endif

namespace orch::resnet {
namespace {

constexpr std::array<const char*, 4> kReasons = {"compute_capability", "no_kernel_image",
                                                 "ptx_unsupported", "cuda_error"};
constexpr std::array<const char*, 2> kOps = {"fused_bn", "max_pool"};

std::array<std::array<std::atomic<std::int64_t>, kReasons.size()>, kOps.size()> g_counts{};

#ifdef ORCH_FUSED_BN_CUDA
std::size_t op_index(OwnKernels op) { return op == OwnKernels::kFusedBn ? 0 : 1; }

KernelImageCache& cache(OwnKernels op) {
  static KernelImageCache fused_bn(&kernels::kernel_attributes);
  static KernelImageCache max_pool(&max_pool_kernels::kernel_attributes);
  return op == OwnKernels::kFusedBn ? fused_bn : max_pool;
}

void count(OwnKernels op, const KernelImage& image) {
  std::size_t r = kReasons.size() - 1;
  for (std::size_t i = 0; i < kReasons.size(); ++i) {
    if (image.reason == kReasons[i]) r = i;
  }
  ++g_counts[op_index(op)][r];
  static std::array<std::once_flag, kOps.size()> once;
  std::call_once(once[op_index(op)], [&] {
    std::cerr << kOps[op_index(op)] << ": orch's CUDA kernels cannot run on this GPU ("
              << image.detail << "), ATen's or cuDNN's operations instead (counted as "
              << kOps[op_index(op)] << ".kernel_unavailable." << kReasons[r] << ")\n";
  });
}
#endif

}  // namespace

bool own_kernels_run_on(OwnKernels op, const torch::Tensor& x) {
#ifdef ORCH_FUSED_BN_CUDA
  if (!x.defined() || !x.is_cuda()) return false;
  const KernelImage& image = cache(op).get(x.get_device());
  if (!image.runnable) count(op, image);
  return image.runnable;
#else
  (void)op;
  (void)x;
  return false;
#endif
}

std::string own_kernels_unavailable_reason(OwnKernels op, int device) {
#ifdef ORCH_FUSED_BN_CUDA
  const KernelImage& image = cache(op).get(device);
  return image.runnable ? "" : image.reason;
#else
  (void)op;
  (void)device;
  return "not_built";
#endif
}

OwnKernelVersions own_kernel_versions(OwnKernels op, int device) {
#ifdef ORCH_FUSED_BN_CUDA
  const KernelImage& image = cache(op).get(device);
  return {image.binary_version, image.ptx_version};
#else
  (void)op;
  (void)device;
  return {};
#endif
}

std::map<std::string, double> kernel_unavailable_counts() {
  std::map<std::string, double> out;
  for (std::size_t o = 0; o < kOps.size(); ++o) {
    for (std::size_t r = 0; r < kReasons.size(); ++r) {
      out[std::string(kOps[o]) + ".kernel_unavailable." + kReasons[r]] =
          static_cast<double>(g_counts[o][r].load());
    }
  }
  return out;
}

}  // namespace orch::resnet
