// The catalogue of rankable metrics.
#include "report/metric_catalog.h"

#include <fmt/format.h>

#include "report/input_error.h"

namespace orch {

const std::vector<MetricInfo>& metric_catalog() {
  static const std::vector<MetricInfo> kCatalog = {
      {"images_per_s", "img/s", Better::kHigher, "training throughput over the measured steps"},
      {"step_ms_mean", "ms", Better::kLower, "wall time per step (measured time / steps)"},
      {"device_step_ms_mean", "ms", Better::kLower, "mean per-step time from CUDA events"},
      {"step_ms_p50", "ms", Better::kLower, "median step time"},
      {"step_ms_p90", "ms", Better::kLower, "90th percentile step time"},
      {"step_ms_p99", "ms", Better::kLower, "99th percentile step time"},
      {"data_wait_ms_mean", "ms", Better::kLower, "host time per step waiting for the loader"},
      {"warmup_s", "s", Better::kLower, "warm-up time (includes cuDNN autotuning, graph capture)"},
      {"peak_allocated_bytes", "bytes", Better::kLower, "peak memory allocated by tensors"},
      {"peak_reserved_bytes", "bytes", Better::kLower, "peak memory reserved by the allocator"},
      {"memory_used_max_bytes", "bytes", Better::kLower, "peak device memory used (NVML)"},
      {"host_peak_rss_bytes", "bytes", Better::kLower, "peak resident memory of the run's process"},
      {"gpu_util_mean_pct", "%", Better::kHigher, "mean GPU utilization (NVML)"},
      {"mem_util_mean_pct", "%", Better::kHigher, "mean memory-bandwidth utilization (NVML)"},
      {"sm_clock_mean_mhz", "MHz", Better::kHigher, "mean SM clock (NVML)"},
      {"power_mean_w", "W", Better::kLower, "mean board power (NVML)"},
      {"power_max_w", "W", Better::kLower, "peak board power (NVML)"},
      {"temperature_max_c", "C", Better::kLower, "peak GPU temperature (NVML)"},
      {"host_cpu_util_mean_pct", "%", Better::kLower, "mean host CPU utilization, all cores"},
      {"host_cpu_busiest_core_mean_pct", "%", Better::kLower,
       "mean utilization of the busiest host core"},
      {"loss_last", "", Better::kLower, "loss at the last measured step"},
  };
  return kCatalog;
}

const MetricInfo& require_metric(const std::string& name) {
  std::string known;
  for (const auto& m : metric_catalog()) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw InputError("unknown metric '" + name + "'; known metrics: " + known);
}

std::string display_unit(const std::string& unit) { return unit == "bytes" ? "GiB" : unit; }

std::string format_metric_value(double value, const std::string& unit) {
  if (unit == "bytes") return fmt::format("{:.2f}", value / (1024.0 * 1024.0 * 1024.0));
  if (unit == "img/s") return fmt::format("{:.1f}", value);
  if (unit == "%" || unit == "W" || unit == "C" || unit == "MHz")
    return fmt::format("{:.0f}", value);
  if (unit == "ms" || unit == "s") return fmt::format("{:.2f}", value);
  return fmt::format("{:.4g}", value);
}

}  // namespace orch
