// `batch_size: auto`: the largest batch that fits, searched the way the article suggests:
// start at 64, double until out of memory, then narrow the gap by bisection. Each probe is a
// short run in a fresh process (recovering from out-of-memory inside one process is
// unreliable), so the search is a small state machine the scheduler drives one probe at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace orch::sweep {

struct BatchProbe {
  std::int64_t batch = 0;
  bool fits = false;
  std::string note;  ///< why it did not fit, when that was not a plain out-of-memory
};

class BatchSearch {
 public:
  /// `start` is the first probe; bisection stops when the gap is `granularity` or less (batch
  /// sizes stay multiples of it, which Tensor Cores like); `limit` caps the doubling.
  explicit BatchSearch(std::int64_t start = 64, std::int64_t granularity = 8,
                       std::int64_t limit = 65536);

  /// The batch to probe next, or nothing when the search is over.
  std::optional<std::int64_t> next() const;
  /// The outcome of probing next(): fits, or ran out of memory (`note` says how, if unusual).
  void report(bool fits, std::string note = {});

  /// The largest batch that fitted; nothing when even the smallest probe did not.
  std::optional<std::int64_t> result() const;
  const std::vector<BatchProbe>& probes() const { return probes_; }

 private:
  std::int64_t granularity_, limit_;
  std::int64_t largest_fit_ = 0;    // 0: none yet
  std::int64_t smallest_fail_ = 0;  // 0: none yet
  std::optional<std::int64_t> next_;
  std::vector<BatchProbe> probes_;
};

}  // namespace orch::sweep
