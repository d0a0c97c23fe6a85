// Between runs in a warm worker (run_reset.h).
#include "runner/run_reset.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>

#include <vector>

namespace orch {

ProcessSettings ProcessSettings::current() {
  const auto& c = at::globalContext();
  ProcessSettings s;
  s.cudnn_benchmark = c.benchmarkCuDNN();
  s.cudnn_deterministic = c.deterministicCuDNN();
  s.deterministic_algorithms = c.deterministicAlgorithms();
  s.deterministic_warn_only = c.deterministicAlgorithmsWarnOnly();
  s.tf32_cublas = c.allowTF32CuBLAS();
  s.tf32_cudnn = c.allowTF32CuDNN();
  s.intra_op_threads = at::get_num_threads();
  return s;
}

void ProcessSettings::apply() const {
  auto& c = at::globalContext();
  c.setBenchmarkCuDNN(cudnn_benchmark);
  c.setDeterministicCuDNN(cudnn_deterministic);
  c.setDeterministicAlgorithms(deterministic_algorithms, deterministic_warn_only);
  c.setAllowTF32CuBLAS(tf32_cublas);
  c.setAllowTF32CuDNN(tf32_cudnn);
  // Only when changed: setting it rebuilds the pool.
  if (intra_op_threads > 0 && at::get_num_threads() != intra_op_threads)
    at::set_num_threads(intra_op_threads);
}

void reset_between_runs(const ProcessSettings& initial) {
  initial.apply();
  if (!torch::cuda::is_available()) return;
  std::vector<c10::DeviceIndex> used;
  const auto devices = static_cast<c10::DeviceIndex>(torch::cuda::device_count());
  for (c10::DeviceIndex d = 0; d < devices; ++d) {
    // A device no run has used has no context; asking its allocator would make one.
    if (!at::detail::getCUDAHooks().hasPrimaryContext(d)) continue;
    used.push_back(d);
    torch::cuda::synchronize(d);
    c10::cuda::setCurrentCUDAStream(c10::cuda::getDefaultCUDAStream(d));
  }
  if (used.empty()) return;
  // Emptied first: the statistics reset after it start from what the next run will find.
  c10::cuda::CUDACachingAllocator::emptyCache();
  for (const c10::DeviceIndex d : used) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(d);
    c10::cuda::CUDACachingAllocator::resetAccumulatedStats(d);
  }
}

}  // namespace orch
