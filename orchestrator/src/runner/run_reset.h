// What a run leaves behind in its process that the next run in the same process must not see:
// what a warm worker (`orch exec --worker`, sweep/worker_pool.h) resets between runs, so that a
// run measures as it would in a fresh process, less the start-up.
//
// Reset: the cuDNN benchmark and determinism flags and the TF32 flags (the precision plugins
// set them; back to what they were when the process started), LibTorch's intra-op thread count
// (a plugin may narrow it), the current CUDA stream of each device (a stream strategy may leave a
// side stream current), the caching allocator's cached blocks (emptied, so the next run's peak
// reserved memory is its own) and its peak and accumulated statistics. The runner itself seeds
// every run (manual_seed, the loader's seed) and makes a new NVML sampler for each, so neither
// needs anything here.
//
// Kept, on purpose: ATen's cuDNN algorithm cache (what cudnn benchmark found for a shape; a
// long training job keeps it too, and re-finding it is the warm-up a worker saves), the CUDA
// context, loaded plugins and cuBLAS/cuDNN handles.
#pragma once

namespace orch {

/// The process-wide settings a run may change, as they are now.
struct ProcessSettings {
  bool cudnn_benchmark = false;
  bool cudnn_deterministic = false;
  bool deterministic_algorithms = false;
  bool deterministic_warn_only = false;
  bool tf32_cublas = false;
  bool tf32_cudnn = true;
  int intra_op_threads = 0;  ///< LibTorch's CPU thread pool (a plugin may narrow it)

  static ProcessSettings current();
  /// Makes them the process's settings again.
  void apply() const;
};

/// Between two runs in one process: `initial` applied again, and (only where CUDA is available
/// and a context exists, so a CPU run or build never makes one) the current streams set back to
/// the default ones, the allocator's cache emptied and its statistics reset.
void reset_between_runs(const ProcessSettings& initial);

}  // namespace orch
