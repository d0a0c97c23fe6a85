// A stand-in for a graph-captured training step, for loader benchmarks (`orch dataset bench
// --busy-gpu-ms`). A loader that decodes on the GPU behaves differently while training keeps
// the GPU full: the nvjpeg loader decodes several times faster on an idle GPU than under a
// captured ResNet50 step, and only the second number says whether it keeps up. Training
// end to end answers that too, but takes a model, minutes and a sweep per loader setting;
// this keeps the SMs busy with a CUDA graph of bf16 matrix products (a fraction of a
// millisecond each, a few hundred per replay, like a step's kernels) replayed back to back on
// a stream of normal priority, at most two replays queued, as a training loop keeps them.
#pragma once

#include <c10/core/Device.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

namespace orch {

class BusyGpu {
 public:
  /// Calibrates one product's time, captures enough of them for about `step_ms` per replay,
  /// and starts replaying on `device` until destroyed. Throws std::invalid_argument for a
  /// non-CUDA device or step_ms <= 0, std::runtime_error when the capture fails.
  BusyGpu(c10::Device device, double step_ms);
  ~BusyGpu();
  BusyGpu(const BusyGpu&) = delete;
  BusyGpu& operator=(const BusyGpu&) = delete;

  /// Products in the graph, and one replay's measured length (ms) on the idle GPU.
  std::int64_t products() const { return products_; }
  double replay_ms() const { return replay_ms_; }
  /// Replays finished so far.
  std::int64_t replays() const { return replays_.load(); }

 private:
  struct State;  // the tensors, the graph and the stream (ATen CUDA types stay in the .cpp)
  void loop();

  std::unique_ptr<State> s_;
  std::int64_t products_ = 0;
  double replay_ms_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> replays_{0};
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace orch
