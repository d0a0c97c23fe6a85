// What a run recorded beside its summary row, as the store reads it back: its telemetry and
// host samples with their measured windows, its measured steps, and the probes of its
// `batch_size: auto` search. Plain data, so the report and the MLflow export read it without
// knowing the tables (Store::run_telemetry, run_steps, sample_series, batch_search).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace orch::storage {

/// One run's GPU (NVML) and host samples that have a time, in order, with their windows.
struct RunTelemetry {
  std::optional<std::pair<double, double>> window;  ///< telemetry.measure_window_s
  /// Why there are no GPU samples: the row's telemetry_reason, else the document's
  /// telemetry.reason; empty when neither says.
  std::string reason;
  std::vector<double> t_s;
  std::vector<std::optional<double>> gpu_util_pct, power_w, memory_used_bytes;
  std::optional<std::pair<double, double>> host_window;  ///< host_telemetry.measure_window_s
  std::vector<double> host_t_s;
  std::vector<std::optional<double>> host_cpu_pct, host_core_pct;
};

/// One row of run_steps.
struct StepRow {
  std::int64_t step = 0;
  std::optional<double> step_ms, data_wait_ms, loss;
};

/// Which samples table a series comes from.
enum class SampleTable { gpu, host };  ///< telemetry_samples, host_samples

/// The measured columns of one samples table, every sample of a run in order. The columns are
/// the table's measurements only: a bit mask (throttle_reasons) or a core number
/// (busiest_core) is no quantity to plot.
struct SampleSeries {
  std::vector<std::string> columns;  ///< the table's column names, in this order
  struct Row {
    std::int64_t seq = 0;
    std::optional<double> t_s;
    std::vector<std::optional<double>> values;  ///< one per column
  };
  std::vector<Row> rows;  ///< by seq
};

/// One row of the `batch_probes` table.
struct BatchProbe {
  std::int64_t batch = 0;
  std::optional<double> images_per_s;
  std::optional<std::int64_t> peak_memory_bytes;
  std::string outcome;
};

/// A run's `batch_size: auto` search: the document's batch_search summary and its probes.
struct BatchSearchRecord {
  std::string mode;  ///< fastest | largest ("" in documents that did not say)
  std::optional<std::int64_t> chosen;
  std::optional<double> search_s, headroom;
  std::vector<BatchProbe> probes;  ///< in the order probed; none for a fixed batch
};

}  // namespace orch::storage
