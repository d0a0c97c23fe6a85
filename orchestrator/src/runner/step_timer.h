// Per-step device time without synchronising inside the timed loop: on CUDA, an event is
// recorded before and after each step on the current stream and read only after the loop;
// on the CPU, where work is synchronous, the host clock is the device clock.
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <c10/core/Device.h>

#include <chrono>
#include <vector>

namespace orch {

class StepTimer {
 public:
  StepTimer(const c10::Device& device, std::size_t steps);
  void start_step();
  void end_step();
  /// Milliseconds per step; call after the device was synchronised.
  std::vector<double> step_ms() const;

 private:
  bool cuda_;
  std::vector<at::cuda::CUDAEvent> starts_, ends_;
  std::vector<std::chrono::steady_clock::time_point> host_starts_, host_ends_;
};

}  // namespace orch
