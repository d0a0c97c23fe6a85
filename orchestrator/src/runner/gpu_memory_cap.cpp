#include "runner/gpu_memory_cap.h"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "plan/memory_size.h"

namespace orch {

std::optional<std::int64_t> gpu_memory_cap_from_environment() {
  const char* v = std::getenv(kGpuMemoryCapVariable);
  if (!v || !*v) return std::nullopt;
  try {
    return parse_memory_size(v);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(kGpuMemoryCapVariable) + ": " + e.what());
  }
}

std::optional<std::int64_t> apply_gpu_memory_cap(const c10::Device& device) {
  const auto cap = gpu_memory_cap_from_environment();
  if (!device.is_cuda()) return std::nullopt;
  // The allocator exists once CUDA is initialised; its limit is the fraction times the
  // device's total memory. Without a cap the fraction goes back to 1: an earlier run in the
  // same process may have set one.
  at::globalContext().lazyInitDevice(c10::kCUDA);
  const auto total =
      static_cast<std::int64_t>(at::cuda::getDeviceProperties(device.index())->totalGlobalMem);
  const bool capped = cap && *cap < total;
  // The fraction bounds what the allocator reserves, and blocks an earlier run in this process
  // left cached count towards it: released first, so the cap is the run's own budget and its
  // peak reserved memory is measured from nothing.
  if (capped) c10::cuda::CUDACachingAllocator::emptyCache();
  c10::cuda::CUDACachingAllocator::setMemoryFraction(
      capped ? static_cast<double>(*cap) / static_cast<double>(total) : 1.0, device.index());
  return capped ? cap : std::nullopt;
}

std::int64_t gpu_memory_limit_bytes(const c10::Device& device) {
  if (!device.is_cuda()) return -1;
  at::globalContext().lazyInitDevice(c10::kCUDA);
  const auto total =
      static_cast<std::int64_t>(at::cuda::getDeviceProperties(device.index())->totalGlobalMem);
  const auto cap = gpu_memory_cap_from_environment();
  return cap && *cap < total ? *cap : total;
}

}  // namespace orch
