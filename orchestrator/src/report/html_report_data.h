// What the HTML report shows, read from the database for one sweep: the ranking (rank_runs,
// as `orch rank`), the baseline and best selections (as `orch compare`), each run's telemetry
// samples and measured window, the stored environments, and the `failures` view.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/compare.h"
#include "report/halving_status.h"
#include "report/ranking.h"
#include "storage/store.h"

namespace orch {

/// One run's NVML samples, every one of them, in order.
struct RunTimeline {
  std::int64_t run_id = 0;
  std::string name, status;
  int repeat = 0;
  std::optional<std::pair<double, double>> window;  ///< telemetry.measure_window_s
  std::string reason;                               ///< why there are no samples, when none
  std::vector<double> t_s;
  std::vector<std::optional<double>> gpu_util_pct, power_w, memory_used_bytes;
  /// The host's samples (host_samples) and their window (host_telemetry.measure_window_s);
  /// empty when the host was not sampled.
  std::optional<std::pair<double, double>> host_window;
  std::vector<double> host_t_s;
  std::vector<std::optional<double>> host_cpu_pct, host_core_pct;
};

/// A row of the `failures` view (read by the store).
using FailureRow = storage::FailureRecord;

/// One row of the `batch_probes` table (read by the store).
using ProbePoint = storage::BatchProbe;

/// The probe curve of one run's `batch_size: auto` search.
struct ProbeCurve {
  std::string name;
  int repeat = 0;
  std::string mode;  ///< fastest | largest ("" in documents that did not say)
  std::optional<std::int64_t> chosen;
  std::optional<double> search_s, headroom;
  std::vector<ProbePoint> probes;  ///< in the order probed
};

/// One configuration's throughput in one sweep (its ok runs with images_per_s).
struct TrendPoint {
  std::string sweep, created_at;
  analysis::Summary stats;
  std::string driver_version, cudnn_version;  ///< of the sweep's runs, for the tooltip
};

/// One configuration of this sweep, found by its hash in other sweeps too.
struct TrendSeries {
  std::string name, config_hash;
  std::vector<TrendPoint> points;  ///< by sweep creation time; this sweep last
};

struct ReportData {
  storage::SweepInfo sweep;
  std::vector<storage::RunRecord> runs;  ///< every run of the sweep, any status
  Ranking ranking;                       ///< by images_per_s, every configuration
  /// The before/after pair: the slowest configuration and the fastest, when there are two.
  std::optional<Selection> baseline, best;
  std::vector<RunTimeline> timelines;        ///< ranked configurations first, then the others
  std::vector<nlohmann::json> environments;  ///< one per run (null when not recorded)
  std::vector<FailureRow> failures;
  std::vector<ProbeCurve> probe_curves;  ///< runs that searched their batch, in run order
  /// Ranked configurations also measured by earlier sweeps of this database (sweeps created
  /// up to this one), best first, at most kMaxTrendSeries.
  std::vector<TrendSeries> trends;
  HalvingStatus halving;  ///< `search: halving`: its rungs and pruned configurations
  /// Where the sweep's time went, all its invocations added up; nullopt when none recorded.
  std::optional<storage::SweepTimeTotal> time;
  std::string generated_at;  ///< ISO 8601 UTC
};

constexpr std::size_t kMaxTrendSeries = 12;

/// Reads everything the report shows about `sweep`.
ReportData gather_report_data(storage::Store& store, const storage::SweepInfo& sweep);

}  // namespace orch
