#pragma once
// For the plugins' CUDA launchers (.cu files; needs only the CUDA runtime's header).
#include <cuda_runtime_api.h>

namespace orch {

// Call right before a launch whose result the caller reads with cudaGetLastError().
//
// cudaGetLastError() returns the calling thread's last error from *any* runtime call, not only
// from the launch just made: an earlier call whose error nobody read would be reported as the
// launch's (a library call on this thread whose failure its caller checked by return value
// only, say; we suspected LibTorch's driver-API lookups of leaving one, not shown). Dropping
// what is pending before the launch makes the check after it report the launch alone, at the
// cost of one cheap runtime call per launch. A sticky error (the context itself is broken) is
// not lost: it stays, and the launch fails with it.
// ("named symbol not found" from a launch is not such a leftover: that launch really failed,
// because the plugin had been unloaded and loaded again; see
// orchestrator/src/plugin_host/plugin_library.cpp.)
inline void discard_pending_cuda_error() { (void)cudaGetLastError(); }

}  // namespace orch
