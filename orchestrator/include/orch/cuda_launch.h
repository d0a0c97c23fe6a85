#pragma once
// For the plugins' CUDA launchers (.cu files; needs only the CUDA runtime's header).
#include <cuda_runtime_api.h>

namespace orch {

// Call right before a launch whose result the caller reads with cudaGetLastError().
//
// cudaGetLastError() returns the calling thread's last error from *any* runtime call, not only
// from the launch just made. LibTorch 2.11 builds its driver-API table (c10::cuda::DriverAPI) on
// first use, for instance when its pinned-memory allocator checks for a primary context, and
// looks up optional driver functions with cudaGetDriverEntryPointByVersion; when the driver
// lacks one, cudaErrorSymbolNotFound ("named symbol not found") stays pending in that thread,
// unread. On the H200 machine the nvjpeg loader's producer thread was the first user in `orch
// dataset bench`, so its first crop kernel "did not start: named symbol not found" although the
// launch was fine (2026-11-30). Dropping what is pending before the launch makes the check after
// it report the launch alone. A sticky error (the context itself is broken) is not lost: it
// stays, and the launch fails with it.
inline void discard_pending_cuda_error() { (void)cudaGetLastError(); }

}  // namespace orch
