// Device resolution and CUDA allocator statistics.
#include "runner/device.h"

#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/cuda.h>

#include <stdexcept>

namespace orch {
namespace {

constexpr auto kAggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);

}  // namespace

c10::Device resolve_device(const std::string& setting) {
  if (setting == "cpu") return c10::Device(c10::kCPU);
  const bool cuda = torch::cuda::is_available();
  if (setting == "auto") return cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  if (setting.rfind("cuda", 0) == 0) {
    if (!cuda) {
      throw std::runtime_error("device '" + setting +
                               "' requested but no CUDA device is visible (use device: auto or "
                               "cpu, or check CUDA_VISIBLE_DEVICES and the driver)");
    }
    c10::Device d(setting);
    if (!d.has_index()) d.set_index(0);
    if (d.index() >= static_cast<int>(torch::cuda::device_count())) {
      throw std::runtime_error("device '" + setting + "' requested but only " +
                               std::to_string(torch::cuda::device_count()) +
                               " CUDA device(s) are visible");
    }
    return d;
  }
  throw std::runtime_error("unknown device '" + setting + "' (allowed: auto, cpu, cuda, cuda:N)");
}

void synchronize(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

void reset_peak_memory(const c10::Device& device) {
  if (!device.is_cuda()) return;
  // The caching allocator is created lazily with the CUDA context; asking it for statistics
  // before that fails with "Invalid device argument", so initialise CUDA first.
  at::globalContext().lazyInitDevice(c10::kCUDA);
  c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
}

std::int64_t peak_allocated_bytes(const c10::Device& device) {
  if (!device.is_cuda()) return -1;
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device.index())
      .allocated_bytes[kAggregate]
      .peak;
}

std::int64_t peak_reserved_bytes(const c10::Device& device) {
  if (!device.is_cuda()) return -1;
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device.index())
      .reserved_bytes[kAggregate]
      .peak;
}

}  // namespace orch
