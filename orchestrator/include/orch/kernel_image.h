#pragma once
// For plugins with CUDA kernels of their own: whether a device can run them, asked of CUDA
// before the first launch rather than learnt from a failed one. A build holds machine code for
// some architectures and maybe PTX (CMAKE_CUDA_ARCHITECTURES); a card it does not cover, or a
// driver too old for the PTX, makes every launch fail with "no kernel image is available". A
// plugin asks once per device and, where the answer is no, runs ATen's or cuDNN's operations
// instead, counting the reason. Needs only the CUDA runtime's header.
//
// The test hook ORCH_TEST_PRETEND_NO_KERNEL_IMAGE=1 makes every device answer no (reason
// no_kernel_image), so the fallbacks can be tried on a GPU the build covers.
#include <cuda_runtime_api.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace orch {

struct KernelImage {
  bool runnable = false;
  /// Why not, as a counter name's last part: "compute_capability" (below 8.0),
  /// "no_kernel_image" (no image or PTX for it), "ptx_unsupported" (the driver is older than
  /// the PTX), "cuda_error" (another failure; `detail` names it). Empty when runnable.
  std::string reason;
  std::string detail;      ///< for a log line
  int binary_version = 0;  ///< cudaFuncAttributes: the image's architecture (major * 10 + minor)
  int ptx_version = 0;     ///< the PTX (virtual architecture) it was compiled from
  int cc_major = 0, cc_minor = 0;  ///< the device's compute capability
};

inline bool pretend_no_kernel_image() {
  const char* v = std::getenv("ORCH_TEST_PRETEND_NO_KERNEL_IMAGE");
  return v && std::strcmp(v, "1") == 0;
}

/// `attributes` is the kernels' own cudaFuncGetAttributes on one of their kernels (all the
/// kernels of one .cu file share its fatbinary, so one answers for them all), called with
/// `device` current; the attributes are read for the current device.
inline KernelImage probe_kernel_image(int device, cudaError_t (*attributes)(cudaFuncAttributes*)) {
  KernelImage r;
  cudaDeviceGetAttribute(&r.cc_major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&r.cc_minor, cudaDevAttrComputeCapabilityMinor, device);
  const std::string cc = std::to_string(r.cc_major) + "." + std::to_string(r.cc_minor);
  if (r.cc_major < 8) {
    r.reason = "compute_capability";
    r.detail = "compute capability " + cc + " is below the 8.0 the kernels are written for";
    return r;
  }
  int previous = 0;
  cudaGetDevice(&previous);
  if (previous != device) cudaSetDevice(device);
  cudaFuncAttributes a{};
  const cudaError_t err = attributes(&a);
  if (previous != device) cudaSetDevice(previous);
  (void)cudaGetLastError();  // the failure is answered here, not by the next launch's check
  if (err == cudaSuccess) {
    r.runnable = true;
    r.binary_version = a.binaryVersion;
    r.ptx_version = a.ptxVersion;
    return r;
  }
  r.reason = err == cudaErrorNoKernelImageForDevice  ? "no_kernel_image"
             : err == cudaErrorUnsupportedPtxVersion ? "ptx_unsupported"
                                                     : "cuda_error";
  r.detail = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) +
             ") for compute capability " + cc;
  return r;
}

/// probe_kernel_image once per device, for the life of the process (a device does not change).
class KernelImageCache {
 public:
  explicit KernelImageCache(cudaError_t (*attributes)(cudaFuncAttributes*))
      : attributes_(attributes) {}

  /// The hook is read at every call, not cached, so a test can set and clear it.
  const KernelImage& get(int device) {
    if (pretend_no_kernel_image()) {
      static const KernelImage pretend{
          false, "no_kernel_image",
          "ORCH_TEST_PRETEND_NO_KERNEL_IMAGE=1 (a test hook) pretends there is none"};
      return pretend;
    }
    if (device < 0 || device >= kDevices) {
      static const KernelImage out_of_range{false, "cuda_error", "device index out of range"};
      return out_of_range;
    }
    Slot& s = slots_[static_cast<std::size_t>(device)];
    std::call_once(s.once, [&] { s.image = probe_kernel_image(device, attributes_); });
    return s.image;
  }

 private:
  static constexpr int kDevices = 64;
  struct Slot {
    std::once_flag once;
    KernelImage image;
  };
  cudaError_t (*attributes_)(cudaFuncAttributes*);
  std::array<Slot, kDevices> slots_;
};

}  // namespace orch
