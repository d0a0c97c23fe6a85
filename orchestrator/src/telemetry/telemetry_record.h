// What the sampler hands back after a run (TelemetryRecord), how it appears in the result
// document (`telemetry`), and the summaries over the measured steps that go into `metrics`.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "telemetry/gpu_sample.h"

namespace orch {

struct TelemetryRecord {
  bool available = false;
  std::string reason;  ///< why not available (empty when available)
  int interval_ms = 100;
  /// Seconds since the sampler started when the measured steps began and ended.
  std::optional<std::pair<double, double>> measure_window_s;
  std::vector<GpuSample> samples;
  /// Field name -> why it was null in at least one sample (the first reason seen).
  std::map<std::string, std::string> missing;
  bool gpu_lost = false;
  std::string gpu_lost_reason;  ///< NVML's error, when gpu_lost

  /// A record for a run that samples nothing (telemetry disabled, CPU device, no NVML).
  static TelemetryRecord unavailable(std::string why, int interval_ms);
};

/// The document's `telemetry` object:
/// {available, reason, source: "nvml", interval_ms, measure_window_s: [t0, t1] | null,
///  samples: [{t_s, gpu_util_pct, ..., throttle_reasons}] (null = missing),
///  missing: {field: reason}, gpu_lost} (+ gpu_lost_reason when lost).
nlohmann::json telemetry_json(const TelemetryRecord& record);

/// Summaries over the samples inside the measure window, for `metrics`:
/// gpu_util_mean_pct, mem_util_mean_pct, power_mean_w, power_max_w, sm_clock_mean_mhz,
/// temperature_max_c, memory_used_max_bytes, pcie_rx_mean_bytes_per_s,
/// pcie_tx_mean_bytes_per_s and telemetry_samples. A summary whose field has no value in the
/// window is left out; nothing at all is returned when telemetry was unavailable or the
/// window was never marked.
nlohmann::json telemetry_metrics(const TelemetryRecord& record);

}  // namespace orch
