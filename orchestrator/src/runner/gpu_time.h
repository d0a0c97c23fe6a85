// Timing GPU work by CUDA events on the current stream: what a busy-GPU calibration and the GPU
// benchmarks need (host-side clocks would time the launches, not the kernels).
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

namespace orch {

/// GPU time of `n` calls of `work` on the current stream, in ms (all n together).
template <class Fn>
double gpu_time_ms(int n, Fn&& work) {
  at::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  start.record(stream);
  for (int i = 0; i < n; ++i) work();
  end.record(stream);
  end.synchronize();
  return static_cast<double>(start.elapsed_time(end));
}

}  // namespace orch
