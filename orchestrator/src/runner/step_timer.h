// Per-step device time without synchronising inside the timed loop: on CUDA, an event is
// recorded before and after each step on the current stream and read only after the loop;
// on the CPU, where work is synchronous, the host clock is the device clock.
//
// On CUDA it also measures how long the compute stream sat idle for want of a batch: a pair of
// events around each hand-off of a batch by the loader (input_wait_begin/end). The first is
// reached when the stream has finished everything queued before the hand-off, the second when
// the host has the batch, so their distance on the device is
//   max(0, hand-off time - max(wait start, end of the work already queued)),
// the time the stream had nothing to do because the host was still waiting for the loader.
// The host's own wait (data_wait_ms) counts that wait whether or not the GPU still had steps
// queued, which with an asynchronously replayed CUDA graph it mostly has.
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <c10/core/Device.h>
#include <c10/cuda/CUDAStream.h>

#include <chrono>
#include <optional>
#include <vector>

namespace orch {

class StepTimer {
 public:
  StepTimer(const c10::Device& device, std::size_t steps);
  void start_step();
  void end_step();
  /// Around the loader's hand-off of a batch during a step (none outside one): on the stream
  /// that was current when the step started, the compute stream of every strategy, which
  /// fetches its batches there. A step may hand off several batches (a prefetching strategy's
  /// first step); its idle time is their sum.
  void input_wait_begin();
  void input_wait_end();
  /// Milliseconds per step; call after the device was synchronised.
  std::vector<double> step_ms() const;
  /// Milliseconds per step the compute stream sat idle waiting for a batch; call after the
  /// device was synchronised. Empty on the CPU, when a step handed off no batch (the
  /// strategy fetched it elsewhere) or when a step handed off more than the events allow for:
  /// then nothing says what the GPU waited, and the caller keeps the host's figures.
  std::vector<double> input_idle_ms() const;

 private:
  bool cuda_;
  std::vector<at::cuda::CUDAEvent> starts_, ends_;
  std::vector<std::chrono::steady_clock::time_point> host_starts_, host_ends_;
  // The hand-off pairs, used in order; wait_step_[k] is the step of pair k.
  std::optional<c10::cuda::CUDAStream> stream_;
  std::vector<at::cuda::CUDAEvent> wait_begins_, wait_ends_;
  std::vector<std::size_t> wait_step_;
  bool in_step_ = false, in_wait_ = false, waits_overflowed_ = false;
};

}  // namespace orch
