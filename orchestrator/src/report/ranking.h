// The ranking behind `orch rank`: a sweep's successful runs grouped by configuration, each
// aggregated to the mean of one metric with its 95% confidence interval (Student t, n-1
// degrees of freedom), ordered best first, with ties against the leader marked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/metric_catalog.h"
#include "storage/statistics.h"
#include "storage/store.h"

namespace orch {

struct RankedConfig {
  int position = 0;  ///< 1 = best
  std::string name, config_hash;
  storage::Summary stats;  ///< of the ranked metric over the configuration's runs
  /// The interval overlaps the leader's: the difference is not significant at this n. A
  /// configuration without an interval (n = 1) counts as its mean alone.
  bool tie = false;
  double speedup = 0;  ///< over the worst configuration (by the ranked metric)
  std::optional<double> data_wait_ms, compute_ms, peak_bytes, gpu_util_pct, power_w;
  /// From the runs' profiles (`profile.steps`), when profiled: GPU kernels per step (0 for a CPU
  /// profile), and the share of the profiled steps during which a kernel ran, in percent (GPU
  /// profiles only).
  std::optional<double> kernels_per_step, trace_busy_pct;
  std::string diagnosis;  ///< the most frequent label of its runs; "" when none
};

struct Ranking {
  MetricInfo metric;
  std::vector<RankedConfig> rows;  ///< best first, cut to `top`
  std::size_t configurations = 0;  ///< ranked before the cut
  std::size_t ok_runs = 0;
  std::size_t unranked = 0;  ///< configurations with runs but none ok with the metric
};

/// Ranks the runs (any statuses; only 'ok' runs with the metric count). `top` 0 keeps all.
Ranking rank_runs(const std::vector<storage::RunRecord>& runs, const MetricInfo& metric,
                  std::size_t top = 0);

/// Do the 95% intervals of a and b overlap?
bool intervals_overlap(const storage::Summary& a, const storage::Summary& b);

}  // namespace orch
