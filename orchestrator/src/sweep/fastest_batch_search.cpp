#include "sweep/fastest_batch_search.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace orch::sweep {

std::optional<std::int64_t> batch_midpoint(std::int64_t low, std::int64_t high,
                                           std::int64_t granularity) {
  const double mid = 0.5 * static_cast<double>(low + high);
  for (std::int64_t step : {std::int64_t{32}, granularity}) {
    if (step <= 0) continue;
    const auto m = static_cast<std::int64_t>(std::llround(mid / static_cast<double>(step))) * step;
    if (m > low && m < high) return m;
  }
  return std::nullopt;
}

FastestBatchSearch::FastestBatchSearch(FastestSearchOptions options)
    : o_(options), next_(options.start) {
  if (o_.start <= 0 || o_.granularity <= 0 || o_.limit < o_.start) {
    throw std::invalid_argument(
        "FastestBatchSearch: start, granularity and limit must be positive");
  }
  if (!(o_.headroom > 0 && o_.headroom <= 1)) {
    throw std::invalid_argument("FastestBatchSearch: the memory headroom must be in (0, 1]");
  }
  if (!(o_.min_gain >= 0)) throw std::invalid_argument("FastestBatchSearch: min_gain below 0");
}

bool FastestBatchSearch::probed(std::int64_t batch) const {
  return std::any_of(probes_.begin(), probes_.end(),
                     [&](const BatchProbe& p) { return p.batch == batch; });
}

std::int64_t FastestBatchSearch::smallest_bad() const {
  std::int64_t bad = 0;
  for (const auto& p : probes_) {
    if (p.outcome != "ok" && (bad == 0 || p.batch < bad)) bad = p.batch;
  }
  return bad;
}

std::optional<std::int64_t> FastestBatchSearch::result() const {
  const BatchProbe* best = nullptr;
  for (const auto& p : probes_) {
    if (p.outcome != "ok" || !p.images_per_s) continue;
    if (!best || *p.images_per_s > *best->images_per_s) best = &p;
  }
  if (!best) return std::nullopt;
  return best->batch;
}

std::optional<double> FastestBatchSearch::predicted_peak(std::int64_t batch) const {
  // The two largest probes that fitted and reported a peak: memory grows about linearly with
  // the batch (activations) above a fixed part (weights, optimizer state, workspace). With one
  // point, or a slope that measurement noise made negative, scale proportionally, which
  // overestimates (the fixed part does not grow) and so errs on the safe side.
  const BatchProbe *a = nullptr, *b = nullptr;  // b: the largest, a: the next
  for (const auto& p : probes_) {
    if (p.outcome != "ok" || !p.peak_memory_bytes) continue;
    if (!b || p.batch > b->batch) {
      a = b;
      b = &p;
    } else if (!a || p.batch > a->batch) {
      a = &p;
    }
  }
  if (!b) return std::nullopt;
  const double pb = static_cast<double>(*b->peak_memory_bytes);
  const double proportional = pb * static_cast<double>(batch) / static_cast<double>(b->batch);
  if (!a) return proportional;
  const double slope =
      (pb - static_cast<double>(*a->peak_memory_bytes)) / static_cast<double>(b->batch - a->batch);
  if (slope <= 0) return proportional;
  return pb + slope * static_cast<double>(batch - b->batch);
}

bool FastestBatchSearch::over_headroom(double peak_bytes) const {
  return device_memory_ && peak_bytes > o_.headroom * static_cast<double>(*device_memory_);
}

bool FastestBatchSearch::worth_probing(std::int64_t batch) const {
  if (batch <= 0 || batch > o_.limit || probed(batch)) return false;
  const std::int64_t bad = smallest_bad();
  if (bad != 0 && batch >= bad) return false;
  if (auto peak = predicted_peak(batch); peak && over_headroom(*peak)) return false;
  return true;
}

void FastestBatchSearch::report(const ProbeMeasurement& m) {
  if (!next_) throw std::logic_error("FastestBatchSearch: no probe outstanding");
  const std::int64_t b = *next_;
  if (m.device_memory_bytes && *m.device_memory_bytes > 0) device_memory_ = m.device_memory_bytes;
  BatchProbe p{b,        m.outcome == "ok", m.note, m.outcome, m.images_per_s, m.peak_memory_bytes,
               m.seconds};
  // `fits` says whether the batch qualifies: within the memory headroom, with a throughput.
  if (p.fits && p.peak_memory_bytes && over_headroom(static_cast<double>(*p.peak_memory_bytes)))
    p.outcome = "over_headroom";
  if (p.outcome == "ok" && !p.images_per_s) {
    // A probe that ran but measured nothing cannot be ranked.
    p.outcome = "failed";
    if (p.note.empty()) p.note = "the probe reported no throughput";
  }
  p.fits = p.outcome == "ok";
  // The best before this probe, for the gain test.
  const std::optional<std::int64_t> best_before = result();
  std::optional<double> best_ips;
  for (const auto& q : probes_) {
    if (best_before && q.batch == *best_before) best_ips = q.images_per_s;
  }
  probes_.push_back(p);

  if (refining_) {
    advance_refining();
    return;
  }
  if (p.outcome != "ok") {
    if (!result()) {
      // Nothing has fitted yet: halve towards 1.
      const std::int64_t half = b / 2;
      next_ = half >= 1 ? std::optional<std::int64_t>(half) : std::nullopt;
      return;
    }
    start_refining(b);
    return;
  }
  if (best_ips && *p.images_per_s < *best_ips * (1.0 + o_.min_gain)) {
    // Saturated or falling: nothing above the largest probe is expected to pay, so the
    // refinement stays between probes.
    start_refining(0);
    return;
  }
  if (worth_probing(2 * b)) {
    next_ = 2 * b;
    return;
  }
  start_refining(2 * b);
}

void FastestBatchSearch::start_refining(std::int64_t upper_hint) {
  refining_ = true;
  candidates_.clear();
  const auto best = result();
  if (!best) {
    next_.reset();
    return;
  }
  // The best's neighbours among the probes; above it, when nothing larger was probed, the
  // size doubling would have tried next.
  std::optional<std::int64_t> lower, upper;
  for (const auto& p : probes_) {
    if (p.batch < *best && (!lower || p.batch > *lower)) lower = p.batch;
    if (p.batch > *best && (!upper || p.batch < *upper)) upper = p.batch;
  }
  if (!upper && upper_hint > *best) upper = upper_hint;
  // The first probe was the best and the next size slower or no faster: the peak may lie below
  // the start, which doubling never saw. Half the start plays the neighbour, as the size
  // doubling would have tried next plays it above. (After a halving the best is below the
  // start and the probes above it did not fit: the larger side is where a gain could be.)
  if (!lower && *best == o_.start && *best >= 2) lower = *best / 2;
  // Above first: when throughput is still rising at the best, a larger batch is the likelier
  // gain. An interval whose two ends both ran within `min_gain` of each other is flat (the GPU
  // is saturated across it), so a batch inside is not expected to beat the best by more than
  // the doubling itself would have; skipping it saves a probe of the largest, slowest sizes.
  if (upper && !flat(*best, *upper)) {
    if (auto m = batch_midpoint(*best, *upper, o_.granularity)) candidates_.push_back(*m);
  }
  if (lower && !flat(*lower, *best)) {
    if (auto m = batch_midpoint(*lower, *best, o_.granularity)) candidates_.push_back(*m);
  }
  advance_refining();
}

std::optional<double> FastestBatchSearch::throughput(std::int64_t batch) const {
  for (const auto& p : probes_) {
    if (p.batch == batch && p.outcome == "ok") return p.images_per_s;
  }
  return std::nullopt;
}

bool FastestBatchSearch::flat(std::int64_t low, std::int64_t high) const {
  const auto a = throughput(low), b = throughput(high);
  if (!a || !b) return false;  // an end that did not fit, or was never probed
  const double hi = std::max(*a, *b), lo = std::min(*a, *b);
  return hi < lo * (1.0 + o_.min_gain);
}

std::int64_t probe_measure_steps(std::int64_t batch, std::int64_t configured) {
  const std::int64_t by_images = batch > 0 ? (kProbeImages + batch - 1) / batch : 10;
  return std::max<std::int64_t>(1,
                                std::min(configured, std::clamp<std::int64_t>(by_images, 3, 10)));
}

void FastestBatchSearch::advance_refining() {
  while (!candidates_.empty()) {
    const std::int64_t c = candidates_.front();
    candidates_.erase(candidates_.begin());
    if (worth_probing(c)) {
      next_ = c;
      return;
    }
  }
  next_.reset();
}

}  // namespace orch::sweep
