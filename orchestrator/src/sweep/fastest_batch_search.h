// `batch_size: auto`: the batch with the highest throughput, not the largest that fits. Past
// some size a GPU is saturated and a larger batch only adds memory traffic (and, near the
// memory limit, allocator retries and cuDNN falling back to algorithms that need less
// workspace), so the largest batch is often markedly slower than a middle one.
//
// The search doubles from `start`, measuring images per second at each size, and stops
// doubling when throughput grows by less than `min_gain` over the best so far (saturated, or
// falling), when a probe does not fit, or when the next size's peak memory, extrapolated from
// the probes so far, would pass `headroom` of the device's memory. Then it refines once around
// the best: the midpoints between the best and its neighbours, rounded to multiples of 32 (or
// 8 where the gap is small), except between two probes within `min_gain` of each other, where
// the GPU is saturated and the largest, slowest probes would buy nothing; when the first probe
// was the best, the midpoint between it and half its size too. The chosen batch is the
// fastest probe that fitted within the headroom. One refinement round keeps the search to a handful
// of probes; each costs a process start and cuDNN's autotuning for a new shape.
#pragma once

#include "sweep/batch_search.h"

namespace orch::sweep {

/// Where `batch_size: auto` starts doubling. Each probe costs a process start, the CUDA context
/// and cuDNN's autotuning for a new shape (6-8 s on an H200 for ResNet50, whatever the batch),
/// and a batch below 128 rarely saturates a GPU (in `bench/run sweeps`, 64 makes a third to a
/// half of the best): a probe there is the most likely to be wasted. A smaller batch is probed
/// when 128 does not fit (the search then halves).
/// `auto-largest` keeps the article's start of 64.
inline constexpr std::int64_t kFastestSearchStart = 128;

struct FastestSearchOptions {
  std::int64_t start = kFastestSearchStart;  ///< the first probe
  std::int64_t granularity = 8;              ///< sizes stay multiples of it (of 1 below it)
  std::int64_t limit = 65536;                ///< doubling never passes it
  double min_gain = 0.02;                    ///< doubling stops when throughput grows by less
  double headroom = 0.9;  ///< the share of device memory a probe's peak may reach
};

class FastestBatchSearch final : public AutoBatchSearch {
 public:
  explicit FastestBatchSearch(FastestSearchOptions options = {});

  std::optional<std::int64_t> next() const override { return next_; }
  void report(const ProbeMeasurement& m) override;
  /// The fastest probe that fitted within the headroom.
  std::optional<std::int64_t> result() const override;
  const std::vector<BatchProbe>& probes() const override { return probes_; }
  std::string mode() const override { return "fastest"; }
  const FastestSearchOptions& options() const { return o_; }

 private:
  bool probed(std::int64_t batch) const;
  /// The smallest probed batch that did not qualify (0: none).
  std::int64_t smallest_bad() const;
  /// The peak memory a batch would need, extrapolated from the probes that fitted; nothing
  /// when no probe reported its peak.
  std::optional<double> predicted_peak(std::int64_t batch) const;
  bool over_headroom(double peak_bytes) const;
  /// A batch worth probing: not probed, below every batch that did not qualify, within the
  /// headroom by prediction.
  bool worth_probing(std::int64_t batch) const;
  /// The throughput of a probe that ran within the headroom.
  std::optional<double> throughput(std::int64_t batch) const;
  /// Both batches ran, and their throughputs are within `min_gain` of each other.
  bool flat(std::int64_t low, std::int64_t high) const;
  /// `upper_hint`: the size doubling would have probed next, when it stopped for memory or the
  /// limit while throughput still grew; 0 when it stopped because throughput did not.
  void start_refining(std::int64_t upper_hint);
  void advance_refining();

  FastestSearchOptions o_;
  std::optional<std::int64_t> next_;
  std::vector<BatchProbe> probes_;
  std::optional<std::int64_t> device_memory_;
  bool refining_ = false;
  std::vector<std::int64_t> candidates_;  // refinement probes still to make, in order
};

/// How many steps a speed probe times: enough for about kProbeImages images, at least 3 (a
/// mean over a few CUDA-event-timed steps), at most 10 and never more than the run's own
/// `measured` steps. At large batches each step is long and steady, so three carry the same
/// information as ten and save seconds per probe where the search spends most of its time.
inline constexpr std::int64_t kProbeImages = 2560;
std::int64_t probe_measure_steps(std::int64_t batch, std::int64_t configured);

/// A batch between `low` and `high` (exclusive) near their middle: a multiple of 32 when the
/// gap allows, else of `granularity`, else nothing.
std::optional<std::int64_t> batch_midpoint(std::int64_t low, std::int64_t high,
                                           std::int64_t granularity = 8);

}  // namespace orch::sweep
