// Resolving the `device` setting (auto | cpu | cuda | cuda:N) to a LibTorch device, and the
// few device facts the runner needs (synchronise, memory statistics) in one place.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace orch {

/// `auto` is the first CUDA device when one is visible, else the CPU. A CUDA request without
/// a visible CUDA device throws std::runtime_error saying so.
c10::Device resolve_device(const std::string& setting);

/// Waits for all work queued on the device (no-op on the CPU).
void synchronize(const c10::Device& device);

/// Forgets the allocator's peak so the next read covers only what follows (CUDA only).
void reset_peak_memory(const c10::Device& device);

/// Peak bytes allocated / reserved by LibTorch's caching allocator; -1 on the CPU.
std::int64_t peak_allocated_bytes(const c10::Device& device);
std::int64_t peak_reserved_bytes(const c10::Device& device);

}  // namespace orch
