// nvJPEG's device memory from PyTorch's caching allocator.
#pragma once

#include <nvjpeg.h>

namespace orch::nvjpeg_loader {

/// Stream-ordered allocations from the caching allocator: no cudaMalloc or cudaFree (which waits
/// for the whole device) while the training stream is busy. Lives as long as the library.
const nvjpegDevAllocatorV2_t* torch_device_allocator();

}  // namespace orch::nvjpeg_loader
