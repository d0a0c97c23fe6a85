// ORCH_GPU_MEMORY_CAP: a cap on what LibTorch's caching allocator may hold on a run's GPU, so a
// large GPU can stand in for a smaller card (ORCH_GPU_MEMORY_CAP=24GiB on an H200 for an RTX
// 4090). Every run applies it, the probes of `batch_size: auto` included (each is a run of its
// own process, which inherits the variable), so a batch that would not fit the smaller card
// fails there with out-of-memory as it would on that card.
//
// What it does not cap: the CUDA context and what libraries allocate outside the caching
// allocator (nvJPEG with `allocator: cuda`, cuDNN's and cuBLAS's handles); docs/smaller-cards.md
// says what that means for the comparison.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>

namespace orch {

inline constexpr const char* kGpuMemoryCapVariable = "ORCH_GPU_MEMORY_CAP";

/// The cap in bytes from the environment; nothing when the variable is unset or empty. Throws
/// std::invalid_argument naming the variable for a value that is not a memory size.
std::optional<std::int64_t> gpu_memory_cap_from_environment();

/// Applies the environment's cap to `device` (CUDA only) through the caching allocator's
/// per-process memory fraction; returns the cap applied, nothing when there is none. A cap at or
/// above the device's memory leaves it uncapped and returns nothing. Throws as above.
std::optional<std::int64_t> apply_gpu_memory_cap(const c10::Device& device);

/// What the caching allocator may hold on `device`: the cap where one applies, else the
/// device's memory (for sizing decisions that must respect the cap); -1 on the CPU.
std::int64_t gpu_memory_limit_bytes(const c10::Device& device);

}  // namespace orch
