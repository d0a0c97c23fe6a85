// Step timing with CUDA events or the host clock, and the compute stream's idle time at each
// batch hand-off.
#include "runner/step_timer.h"

#include <cuda_runtime_api.h>

namespace orch {
namespace {

// Hand-off pairs beyond one per step: room for a strategy that fetches two batches in some
// steps (copy-overlap's first step), without creating events inside the timed loop.
constexpr std::size_t kSpareWaits = 16;

}  // namespace

StepTimer::StepTimer(const c10::Device& device, std::size_t steps) : cuda_(device.is_cuda()) {
  if (cuda_) {
    // Events are created up front so creating them never lands inside the timed loop.
    starts_.reserve(steps);
    ends_.reserve(steps);
    for (std::size_t i = 0; i < steps; ++i) {
      starts_.emplace_back(cudaEventDefault);
      ends_.emplace_back(cudaEventDefault);
    }
    wait_begins_.reserve(steps + kSpareWaits);
    wait_ends_.reserve(steps + kSpareWaits);
    wait_step_.reserve(steps + kSpareWaits);
    for (std::size_t i = 0; i < steps + kSpareWaits; ++i) {
      wait_begins_.emplace_back(cudaEventDefault);
      wait_ends_.emplace_back(cudaEventDefault);
    }
  }
  host_starts_.reserve(steps);
  host_ends_.reserve(steps);
}

void StepTimer::start_step() {
  if (cuda_) {
    stream_ = c10::cuda::getCurrentCUDAStream();
    starts_[host_starts_.size()].record(*stream_);
  }
  host_starts_.push_back(std::chrono::steady_clock::now());
  in_step_ = true;
}

void StepTimer::end_step() {
  if (cuda_) ends_[host_ends_.size()].record();
  host_ends_.push_back(std::chrono::steady_clock::now());
  in_step_ = false;
  in_wait_ = false;
}

void StepTimer::input_wait_begin() {
  if (!cuda_ || !in_step_) return;
  if (wait_step_.size() == wait_begins_.size()) {
    waits_overflowed_ = true;
    return;
  }
  wait_begins_[wait_step_.size()].record(*stream_);
  in_wait_ = true;
}

void StepTimer::input_wait_end() {
  if (!in_wait_) return;
  wait_ends_[wait_step_.size()].record(*stream_);
  wait_step_.push_back(host_starts_.size() - 1);
  in_wait_ = false;
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

std::vector<double> StepTimer::input_idle_ms() const {
  if (!cuda_ || waits_overflowed_) return {};
  std::vector<double> out(host_ends_.size(), 0.0);
  std::vector<bool> handed_off(host_ends_.size(), false);
  for (std::size_t k = 0; k < wait_step_.size(); ++k) {
    const std::size_t step = wait_step_[k];
    if (step >= out.size()) continue;  // a step begun but never ended (the loop threw)
    out[step] += wait_begins_[k].elapsed_time(wait_ends_[k]);
    handed_off[step] = true;
  }
  for (const bool h : handed_off) {
    if (!h) return {};
  }
  return out;
}

}  // namespace orch
