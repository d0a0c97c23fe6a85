// `batch_size: auto`: the search for a batch size, probe by probe. Each probe is a short run in
// a fresh process (recovering from out-of-memory inside one process is unreliable), so a search
// is a small state machine the launcher drives one probe at a time: next() names the batch to
// probe, report() says how it went.
//
// Two searches: FastestBatchSearch (fastest_batch_search.h, what `auto` means) and BatchSearch
// here, `auto-largest`: the largest batch that fits, as the article suggests (start at 64,
// double until out of memory, then narrow the gap by bisection).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace orch::sweep {

/// What one probe measured, as the launcher read it from the probe's result document.
struct ProbeMeasurement {
  /// ok, oom, or failed (an error above a batch that fitted, counted as not fitting).
  std::string outcome = "ok";
  std::optional<double> images_per_s;
  std::optional<std::int64_t> peak_memory_bytes;    ///< the allocator's peak reserved bytes
  std::optional<std::int64_t> device_memory_bytes;  ///< the device's total memory
  std::string note;               ///< why it did not fit, when that was not a plain out-of-memory
  std::optional<double> seconds;  ///< the probe process's wall time, where the launcher timed it
};

/// One probe of a search, in the order probed (the result document's `batch_search.probes`
/// and the `batch_probes` table).
struct BatchProbe {
  std::int64_t batch = 0;
  bool fits = false;
  std::string note;
  /// ok, oom, failed, or over_headroom (it ran, but its peak memory passed the headroom, so it
  /// is not chosen).
  std::string outcome;
  std::optional<double> images_per_s;
  std::optional<std::int64_t> peak_memory_bytes;
  /// Where the search's time went: a large batch's probe costs several small ones.
  std::optional<double> seconds;
};

/// The interface the launcher drives.
class AutoBatchSearch {
 public:
  virtual ~AutoBatchSearch() = default;
  /// The batch to probe next, or nothing when the search is over.
  virtual std::optional<std::int64_t> next() const = 0;
  /// The outcome of probing next().
  virtual void report(const ProbeMeasurement& m) = 0;
  /// The chosen batch; nothing when no probe qualified (even the smallest did not fit).
  virtual std::optional<std::int64_t> result() const = 0;
  virtual const std::vector<BatchProbe>& probes() const = 0;
  /// "fastest" or "largest", as the result document names the search.
  virtual std::string mode() const = 0;
};

class BatchSearch final : public AutoBatchSearch {
 public:
  /// `start` is the first probe; bisection stops when the gap is `granularity` or less (batch
  /// sizes stay multiples of it, which Tensor Cores like); `limit` caps the doubling.
  explicit BatchSearch(std::int64_t start = 64, std::int64_t granularity = 8,
                       std::int64_t limit = 65536);

  std::optional<std::int64_t> next() const override;
  /// The outcome of probing next(): fits, or ran out of memory (`note` says how, if unusual).
  void report(bool fits, std::string note = {});
  void report(const ProbeMeasurement& m) override;

  /// The largest batch that fitted; nothing when even the smallest probe did not.
  std::optional<std::int64_t> result() const override;
  const std::vector<BatchProbe>& probes() const override { return probes_; }
  std::string mode() const override { return "largest"; }

 private:
  std::int64_t granularity_, limit_;
  std::int64_t largest_fit_ = 0;    // 0: none yet
  std::int64_t smallest_fail_ = 0;  // 0: none yet
  std::optional<std::int64_t> next_;
  std::vector<BatchProbe> probes_;
};

}  // namespace orch::sweep
