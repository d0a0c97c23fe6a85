#include "torch_allocator.h"

#include <c10/cuda/CUDACachingAllocator.h>

#include <cstddef>
#include <exception>

namespace orch::nvjpeg_loader {
namespace {

int torch_device_malloc(void*, void** ptr, std::size_t size, cudaStream_t stream) {
  try {
    *ptr = c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(size, stream);
    return 0;
  } catch (const std::exception&) {
    return 1;  // nvJPEG reports an allocator failure
  }
}
int torch_device_free(void*, void* ptr, std::size_t, cudaStream_t) {
  c10::cuda::CUDACachingAllocator::raw_delete(ptr);
  return 0;
}
constexpr nvjpegDevAllocatorV2_t kTorchAllocator{&torch_device_malloc, &torch_device_free, nullptr};

}  // namespace

const nvjpegDevAllocatorV2_t* torch_device_allocator() { return &kTorchAllocator; }

}  // namespace orch::nvjpeg_loader
