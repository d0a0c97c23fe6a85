// The ranking behind `orch rank`: a sweep's successful runs grouped by configuration, each
// aggregated to the mean of one metric with its 95% confidence interval (Student t, n-1
// degrees of freedom), ordered best first, with ties against the leader marked. A noisy
// configuration (its interval wider than ±10% of its mean, analysis::is_noisy) is marked, and
// never ranks above a steady one whose interval overlaps its own: it cannot win a tie by being
// noisy.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/statistics.h"
#include "report/metric_catalog.h"
#include "storage/store.h"

namespace orch {

struct RankedConfig {
  int position = 0;  ///< 1 = best
  std::string name, config_hash;
  analysis::Summary stats;  ///< of the ranked metric over the configuration's runs
  /// The interval overlaps the leader's: the difference is not significant at this n. A
  /// configuration without an interval (n = 1) counts as its mean alone.
  bool tie = false;
  /// Its interval reaches further than analysis::kNoisyShare of its mean either side.
  bool noisy = false;
  double speedup = 0;     ///< over the baseline, else the worst configuration (by the metric)
  bool baseline = false;  ///< the configuration the experiment's `baseline:` names
  std::optional<double> data_wait_ms, compute_ms, peak_bytes, gpu_util_pct, power_w;
  /// From the runs' profiles (`profile.steps`), when profiled: GPU kernels per step (0 for a CPU
  /// profile), and the share of the profiled steps during which a kernel ran, in percent (GPU
  /// profiles only).
  std::optional<double> kernels_per_step, trace_busy_pct;
  /// The host's CPU over the measured steps (telemetry/host_sampler.h), when sampled: every
  /// core together, and the busiest single core, in percent.
  std::optional<double> host_cpu_pct, host_core_pct;
  std::string diagnosis;  ///< the most frequent label of its runs; "" when none
  int diverged_runs = 0;  ///< of stats.n, runs whose loss became NaN or infinite (when included)
  /// Of stats.n, runs that started with another process computing on their GPU (metric
  /// gpu_other_processes > 0): their numbers measured a shared GPU.
  int shared_gpu_runs = 0;
  /// The batch sizes `batch_size: auto` chose for its runs, ascending, each once; empty for a
  /// configuration with a fixed batch.
  std::vector<std::int64_t> auto_batches;
};

/// The configuration's name as rank and the report show it: with the batch that `batch_size:
/// auto` chose, "batch_size=auto (chose 768)", since the name alone says only "auto".
/// Plain text: the terminal table and the report escape it their own way.
std::string configuration_label(const RankedConfig& c);

/// The diagnosis column: the marks that qualify the numbers (DIVERGED, SHARED GPU, with how
/// many of the runs when not all; NOISY with its interval's share of the mean) before the runs'
/// most frequent diagnosis; "-" for none.
/// Plain text: the terminal table and the report escape it their own way.
std::string diagnosis_column(const RankedConfig& c);

/// The host CPU column, beside the GPU's utilization: every core's mean share and the busiest
/// core's, "40% / 99%" ("-" where the host was not sampled).
std::string host_cpu_cell(const RankedConfig& c);

/// What NOISY means, one sentence for the rank table's and the report's footnotes.
std::string noisy_note();

/// A run whose loss became NaN or infinite (status `diverged`): listed with its reason whether
/// or not it is ranked.
struct DivergedRun {
  std::string name, config_hash, error;
  int repeat = 0;
  bool ranked = false;  ///< counted in its configuration's row (Diverged::include)
};

/// Diverged runs measured a speed on numbers that mean nothing: left out of the ranking unless
/// asked for (`orch rank --include-diverged`), and then marked.
enum class Diverged { leave_out, include };

struct Ranking {
  MetricInfo metric;
  std::vector<RankedConfig> rows;  ///< best first, cut to `top`
  std::size_t configurations = 0;  ///< ranked before the cut
  std::size_t ok_runs = 0;
  std::size_t unranked = 0;           ///< configurations with runs but none ranked with the metric
  std::vector<DivergedRun> diverged;  ///< every diverged run, by name and repeat
  std::size_t diverged_ranked = 0;    ///< of those, counted in the rows (Diverged::include)
  /// The configuration the speed-up is against: the baseline's name when the experiment names
  /// one that has a ranked row, else empty (against the worst).
  std::string baseline;
};

/// Ranks the runs (any statuses; only 'ok' runs with the metric count, and 'diverged' ones too
/// when `diverged` says so). `top` 0 keeps all. `baseline`: the hash of the configuration the
/// speed-up is against (ShownRuns::baseline); empty, or one without a ranked row: the worst.
Ranking rank_runs(const std::vector<storage::RunRecord>& runs, const MetricInfo& metric,
                  std::size_t top = 0, Diverged diverged = Diverged::leave_out,
                  const std::string& baseline = {});

/// What the speed-up is against, one sentence for the footnotes: the experiment's `baseline:`,
/// or the slowest configuration when the file names none (saying how to name one).
std::string speedup_note(const Ranking& ranking);

/// Do the 95% intervals of a and b overlap?
bool intervals_overlap(const analysis::Summary& a, const analysis::Summary& b);

}  // namespace orch
