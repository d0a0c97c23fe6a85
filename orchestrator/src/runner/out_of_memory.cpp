#include "runner/out_of_memory.h"

#include <array>

namespace orch {
namespace {

enum class Memory { device, host, address };

struct Signature {
  std::string_view text;
  Memory memory;
};

// Only messages that say an allocation failed or could not be sized: an unrelated error that
// merely happens at a large batch (cuDNN's internal errors, 32-bit index limits) stays `failed`.
constexpr std::array<Signature, 9> kSignatures{{
    // c10::OutOfMemoryError from the CUDA caching allocator ("Tried to allocate 11.2 TiB").
    {"CUDA out of memory", Memory::device},
    // The same error raised in Python (`torch.OutOfMemoryError`), as a script workload's
    // traceback names it (runner/script_workload.cpp).
    {"OutOfMemoryError", Memory::device},
    // cudaErrorMemoryAllocation outside the caching allocator (a library's own cudaMalloc,
    // pinned host memory): C10_CUDA_CHECK spells it this way.
    {"CUDA error: out of memory", Memory::device},
    {"CUBLAS_STATUS_ALLOC_FAILED", Memory::device},
    {"CUDNN_STATUS_ALLOC_FAILED", Memory::device},
    // LibTorch's CPU allocator: a c10::Error, not an OutOfMemoryError.
    {"DefaultCPUAllocator: can't allocate memory", Memory::host},
    {"std::bad_alloc", Memory::host},
    // Sizes whose element or byte count overflows 64 bits (a batch of 10^15 images): no device
    // could hold them, and c10 refuses before asking any allocator.
    {"Storage size calculation overflowed", Memory::address},
    {"numel: integer multiplication overflow", Memory::address},
}};

}  // namespace

std::optional<std::string> out_of_memory_error(std::string_view what, std::int64_t batch) {
  for (const auto& s : kSignatures) {
    if (what.find(s.text) == std::string_view::npos) continue;
    const std::string at = " at batch size " + std::to_string(batch) + ": ";
    switch (s.memory) {
      case Memory::device:
        return "out of memory" + at + std::string(what);
      case Memory::host:
        return "out of host memory" + at + std::string(what);
      case Memory::address:
        return "out of memory" + at + "its tensors are too large to address (" + std::string(what) +
               ")";
    }
  }
  return std::nullopt;
}

}  // namespace orch
