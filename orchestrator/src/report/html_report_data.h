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
};

/// A row of the `failures` view.
struct FailureRow {
  std::int64_t run_id = 0;
  std::string name, status, error, stderr_tail;
  int repeat = 0, attempts = 0;
  std::optional<std::int64_t> exit_code, term_signal;
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
  std::string generated_at;  ///< ISO 8601 UTC
};

/// Reads everything the report shows about `sweep`.
ReportData gather_report_data(storage::Store& store, const storage::SweepInfo& sweep);

}  // namespace orch
