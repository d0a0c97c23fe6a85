// Step timing with CUDA events or the host clock.
#include "runner/step_timer.h"

#include <cuda_runtime_api.h>

namespace orch {

StepTimer::StepTimer(const c10::Device& device, std::size_t steps) : cuda_(device.is_cuda()) {
  if (cuda_) {
    // Events are created up front so creating them never lands inside the timed loop.
    starts_.reserve(steps);
    ends_.reserve(steps);
    for (std::size_t i = 0; i < steps; ++i) {
      starts_.emplace_back(cudaEventDefault);
      ends_.emplace_back(cudaEventDefault);
    }
  }
  host_starts_.reserve(steps);
  host_ends_.reserve(steps);
}

void StepTimer::start_step() {
  if (cuda_) starts_[host_starts_.size()].record();
  host_starts_.push_back(std::chrono::steady_clock::now());
}

void StepTimer::end_step() {
  if (cuda_) ends_[host_ends_.size()].record();
  host_ends_.push_back(std::chrono::steady_clock::now());
}

std::vector<double> StepTimer::step_ms() const {
  std::vector<double> out;
  out.reserve(host_ends_.size());
  for (std::size_t i = 0; i < host_ends_.size(); ++i) {
    if (cuda_) {
      out.push_back(starts_[i].elapsed_time(ends_[i]));
    } else {
      out.push_back(
          std::chrono::duration<double, std::milli>(host_ends_[i] - host_starts_[i]).count());
    }
  }
  return out;
}

}  // namespace orch
