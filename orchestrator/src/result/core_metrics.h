// The metrics every measured run has, typed (google/benchmark's Run beside its UserCounters):
// throughput, step times, input wait, GPU idle, losses, warm-up, memory peaks. The runner
// writes them through CoreMetrics and the commands read them through it or through the key
// constants below, which are the only spelling of their JSON keys.
//
// A document's `metrics` section itself stays JSON (ResultDocument::metrics): it also holds
// the telemetry summaries and whatever numbers a script workload reports, and a document from
// another program keeps each value exactly as written (an integer throughput stays an
// integer). CoreMetrics is read from it and written into it; the entries it does not know are
// left as they are. The plugins' counters are the document's separate `counters` map.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "result/run_phases.h"

namespace orch {

/// The JSON keys of the metrics that orch's commands read by name. The core metrics' keys are
/// tied to CoreMetrics' members in core_metrics.cpp; the phases' are phase_key's.
namespace metric_key {
constexpr const char* kImagesPerS = "images_per_s";
constexpr const char* kStepMsMean = "step_ms_mean";
constexpr const char* kDeviceStepMsMean = "device_step_ms_mean";
constexpr const char* kStepMsP50 = "step_ms_p50";
constexpr const char* kStepMsP90 = "step_ms_p90";
constexpr const char* kStepMsP99 = "step_ms_p99";
constexpr const char* kDataWaitMsMean = "data_wait_ms_mean";
constexpr const char* kGpuIdleMsMean = "gpu_idle_ms_mean";
constexpr const char* kGpuIdleShare = "gpu_idle_share";
constexpr const char* kStartupS = phase_key::kStartup;
constexpr const char* kSetupS = phase_key::kSetup;
constexpr const char* kWarmupS = phase_key::kWarmup;
constexpr const char* kMeasureS = phase_key::kMeasure;
constexpr const char* kWarmupSteps = "warmup_steps";
constexpr const char* kWarmupSteady = "warmup_steady";
constexpr const char* kLossFirst = "loss_first";
constexpr const char* kLossLast = "loss_last";
constexpr const char* kSkippedSteps = "skipped_steps";
constexpr const char* kCudnnBenchmark = "cudnn_benchmark";
constexpr const char* kParamChecksum = "param_checksum";
constexpr const char* kPeakAllocatedBytes = "peak_allocated_bytes";
constexpr const char* kPeakReservedBytes = "peak_reserved_bytes";
constexpr const char* kHostPeakRssBytes = "host_peak_rss_bytes";
constexpr const char* kGpuOtherProcesses = "gpu_other_processes";

// Written by the telemetry summaries (telemetry/), read by name by the report and diagnosis.
constexpr const char* kGpuUtilMeanPct = "gpu_util_mean_pct";
constexpr const char* kMemUtilMeanPct = "mem_util_mean_pct";
constexpr const char* kSmClockMeanMhz = "sm_clock_mean_mhz";
constexpr const char* kPowerMeanW = "power_mean_w";
constexpr const char* kPowerMaxW = "power_max_w";
constexpr const char* kTemperatureMaxC = "temperature_max_c";
constexpr const char* kMemoryUsedMaxBytes = "memory_used_max_bytes";
constexpr const char* kPcieRxMeanBytesPerS = "pcie_rx_mean_bytes_per_s";
constexpr const char* kHostCpuUtilMeanPct = "host_cpu_util_mean_pct";
constexpr const char* kHostCpuBusiestCoreMeanPct = "host_cpu_busiest_core_mean_pct";
constexpr const char* kHostCpuCores = "host_cpu_cores";
}  // namespace metric_key

/// The core metrics; each is absent when the document lacks it (a failed run, an older orch,
/// a script that did not report it). Counts and byte sizes are integers in the JSON, the two
/// flags 1 or 0, the rest floating point.
struct CoreMetrics {
  std::optional<double> images_per_s;         ///< throughput over the measured steps
  std::optional<double> step_ms_mean;         ///< wall time per step (measured time / steps)
  std::optional<double> device_step_ms_mean;  ///< mean per-step time from CUDA events
  std::optional<double> step_ms_p50, step_ms_p90, step_ms_p99;
  std::optional<double> data_wait_ms_mean;  ///< host time per step waiting for the loader
  std::optional<double> gpu_idle_ms_mean;   ///< GPU idle for want of a batch, per step
  std::optional<double> gpu_idle_share;     ///< gpu_idle_ms_mean over step_ms_mean
  std::optional<double> startup_s, setup_s, warmup_s, measure_s;  ///< run_phases.h
  std::optional<std::int64_t> warmup_steps;
  std::optional<bool> warmup_steady;  ///< an adaptive warm-up ended on a steady step time
  std::optional<double> loss_first, loss_last;
  std::optional<double> skipped_steps;  ///< the precision's skipped steps (a counter's value)
  std::optional<bool> cudnn_benchmark;
  std::optional<double> param_checksum;
  std::optional<std::int64_t> peak_allocated_bytes, peak_reserved_bytes, host_peak_rss_bytes;
  std::optional<std::int64_t> gpu_other_processes;  ///< other processes seen on the GPU

  bool operator==(const CoreMetrics&) const = default;
};

/// Reads the core metrics from a `metrics` object as leniently as json_number: any number,
/// or a boolean as 1 or 0, is read (an integer's value for a floating-point member, a float
/// rounded for an integer one, non-zero as true for a flag); a missing or ill-typed entry
/// (a string, null) leaves its member absent. Never throws; anything but an object reads as
/// no metrics.
CoreMetrics read_core_metrics(const nlohmann::json& metrics);

/// Writes the members that are set into `metrics` (made an object if it is not one), each as
/// its JSON type; entries it does not know are kept.
void write_core_metrics(const CoreMetrics& core, nlohmann::json& metrics);

}  // namespace orch
