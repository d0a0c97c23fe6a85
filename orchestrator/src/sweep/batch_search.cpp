#include "sweep/batch_search.h"

#include <algorithm>
#include <stdexcept>

namespace orch::sweep {

BatchSearch::BatchSearch(std::int64_t start, std::int64_t granularity, std::int64_t limit)
    : granularity_(granularity), limit_(limit), next_(start) {
  if (start <= 0 || granularity <= 0 || limit < start) {
    throw std::invalid_argument("BatchSearch: start, granularity and limit must be positive");
  }
}

std::optional<std::int64_t> BatchSearch::next() const { return next_; }

std::optional<std::int64_t> BatchSearch::result() const {
  if (largest_fit_ == 0) return std::nullopt;
  return largest_fit_;
}

void BatchSearch::report(bool fits, std::string note) {
  if (!next_) throw std::logic_error("BatchSearch: no probe outstanding");
  const std::int64_t b = *next_;
  probes_.push_back(
      {b, fits, std::move(note), fits ? "ok" : "oom", std::nullopt, std::nullopt, std::nullopt});
  if (fits)
    largest_fit_ = std::max(largest_fit_, b);
  else
    smallest_fail_ = smallest_fail_ == 0 ? b : std::min(smallest_fail_, b);

  if (smallest_fail_ == 0) {  // still doubling
    next_ = b * 2 <= limit_ ? std::optional<std::int64_t>(b * 2) : std::nullopt;
    return;
  }
  if (largest_fit_ == 0) {
    // Even the first probe failed: halve towards one granule (and below it, to 1).
    const std::int64_t half = b / 2;
    next_ = half >= 1 ? std::optional<std::int64_t>(half) : std::nullopt;
    return;
  }
  // Bisect between the largest fit and the smallest failure, on multiples of the granularity
  // (or of 1 below one granule).
  const std::int64_t step = largest_fit_ >= granularity_ ? granularity_ : 1;
  if (smallest_fail_ - largest_fit_ <= step) {
    next_.reset();
    return;
  }
  std::int64_t mid = largest_fit_ + (smallest_fail_ - largest_fit_) / 2;
  mid -= mid % step;
  if (mid <= largest_fit_) mid = largest_fit_ + step;
  next_ = mid < smallest_fail_ ? std::optional<std::int64_t>(mid) : std::nullopt;
}

void BatchSearch::report(const ProbeMeasurement& m) {
  report(m.outcome == "ok", m.note);
  BatchProbe& p = probes_.back();
  p.outcome = m.outcome;
  p.images_per_s = m.images_per_s;
  p.peak_memory_bytes = m.peak_memory_bytes;
  p.seconds = m.seconds;
}

}  // namespace orch::sweep
