// The catalogue of rankable metrics.
#include "report/metric_catalog.h"

#include <fmt/format.h>

#include "report/input_error.h"
#include "result/core_metrics.h"

namespace orch {

const std::vector<MetricInfo>& metric_catalog() {
  static const std::vector<MetricInfo> kCatalog = {
      {metric_key::kImagesPerS, "img/s", Better::kHigher,
       "training throughput over the measured steps"},
      {metric_key::kStepMsMean, "ms", Better::kLower, "wall time per step (measured time / steps)"},
      {metric_key::kDeviceStepMsMean, "ms", Better::kLower, "mean per-step time from CUDA events"},
      {metric_key::kStepMsP50, "ms", Better::kLower, "median step time"},
      {metric_key::kStepMsP90, "ms", Better::kLower, "90th percentile step time"},
      {metric_key::kStepMsP99, "ms", Better::kLower, "99th percentile step time"},
      {metric_key::kDataWaitMsMean, "ms", Better::kLower,
       "host time per step waiting for the loader"},
      {metric_key::kWarmupS, "s", Better::kLower,
       "warm-up time (includes cuDNN autotuning, graph capture)"},
      {metric_key::kPeakAllocatedBytes, "bytes", Better::kLower,
       "peak memory allocated by tensors"},
      {metric_key::kPeakReservedBytes, "bytes", Better::kLower,
       "peak memory reserved by the allocator"},
      {metric_key::kMemoryUsedMaxBytes, "bytes", Better::kLower, "peak device memory used (NVML)"},
      {metric_key::kHostPeakRssBytes, "bytes", Better::kLower,
       "peak resident memory of the run's process"},
      {metric_key::kGpuUtilMeanPct, "%", Better::kHigher, "mean GPU utilization (NVML)"},
      {metric_key::kMemUtilMeanPct, "%", Better::kHigher,
       "mean memory-bandwidth utilization (NVML)"},
      {metric_key::kSmClockMeanMhz, "MHz", Better::kHigher, "mean SM clock (NVML)"},
      {metric_key::kPowerMeanW, "W", Better::kLower, "mean board power (NVML)"},
      {metric_key::kPowerMaxW, "W", Better::kLower, "peak board power (NVML)"},
      {metric_key::kTemperatureMaxC, "C", Better::kLower, "peak GPU temperature (NVML)"},
      {metric_key::kHostCpuUtilMeanPct, "%", Better::kLower,
       "mean host CPU utilization, all cores"},
      {metric_key::kHostCpuBusiestCoreMeanPct, "%", Better::kLower,
       "mean utilization of the busiest host core"},
      {metric_key::kLossLast, "", Better::kLower, "loss at the last measured step"},
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
