// `steps.warmup: auto`: when a run's warm-up may end. A fixed warm-up count is either too short
// for the slow starts (cuDNN autotuning every new shape, a CUDA graph's capture, fp16's loss
// scaler skipping steps) or too long for the rest, and every surplus step costs a night its
// measurement. So the warm-up goes on until its step times settle.
//
// The rule: after the fewest steps the run needs anyway (kAutoWarmupMinSteps, the stream
// strategy's own warm-up plus two, the loss scaler's skipped steps), the warm-up ends at the
// first step that makes the last kWindow step times agree within kTolerance of their median
// (max - min <= tolerance x median), or at the cap, whichever comes first; the run records
// which (metrics warmup_steady 1 or 0) and the steps taken.
//
// Why this rule. torch.utils.benchmark's adaptive_autorange keeps measuring blocks until their
// IQR is under 10% of the median, a rule for the measurement itself; asv and google/benchmark
// warm up for a fixed time (warmup_time, MinWarmUpTime). A training step is long (tens of ms)
// and its transients are not noise but one-off work orders of magnitude above the steady step
// (an autotuning step takes seconds, a capture step several steps' time), so a steady window
// is sharply defined: five steps within 2% is reached a few steps after the last transient
// and is not reached while any remains. The cap keeps a run whose steps never settle (an input
// pipeline that jitters more than 2%) from warming up all night: it then measures as a fixed
// warm-up would, and says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace orch {

class SteadySteps {
 public:
  static constexpr std::size_t kWindow = 5;
  static constexpr double kTolerance = 0.02;
  static constexpr std::int64_t kMaxSteps = 200;  ///< warm-up steps in all, at most
  static constexpr double kMaxSeconds = 120;      ///< of warm-up, at most

  /// Adds one warm-up step's wall time; true when the last kWindow agree within kTolerance.
  bool add(double step_s);
  /// Whether the window is steady now.
  bool steady() const;
  /// The step times added, in order.
  const std::vector<double>& times() const { return times_; }

 private:
  std::vector<double> times_;
};

}  // namespace orch
