// CoreMetrics <-> a document's `metrics` object, through one table of member and key.
#include "result/core_metrics.h"

#include <cmath>
#include <variant>

#include "result/json_fields.h"

namespace orch {
namespace {

using json = nlohmann::json;
using Member =
    std::variant<std::optional<double> CoreMetrics::*, std::optional<std::int64_t> CoreMetrics::*,
                 std::optional<bool> CoreMetrics::*>;

struct Field {
  const char* key;
  Member member;
};

// The one place a core metric's member is tied to its key: read and write both walk it.
constexpr Field kFields[] = {
    {metric_key::kImagesPerS, &CoreMetrics::images_per_s},
    {metric_key::kStepMsMean, &CoreMetrics::step_ms_mean},
    {metric_key::kDeviceStepMsMean, &CoreMetrics::device_step_ms_mean},
    {metric_key::kStepMsP50, &CoreMetrics::step_ms_p50},
    {metric_key::kStepMsP90, &CoreMetrics::step_ms_p90},
    {metric_key::kStepMsP99, &CoreMetrics::step_ms_p99},
    {metric_key::kDataWaitMsMean, &CoreMetrics::data_wait_ms_mean},
    {metric_key::kGpuIdleMsMean, &CoreMetrics::gpu_idle_ms_mean},
    {metric_key::kGpuIdleShare, &CoreMetrics::gpu_idle_share},
    {metric_key::kStartupS, &CoreMetrics::startup_s},
    {metric_key::kSetupS, &CoreMetrics::setup_s},
    {metric_key::kWarmupS, &CoreMetrics::warmup_s},
    {metric_key::kMeasureS, &CoreMetrics::measure_s},
    {metric_key::kWarmupSteps, &CoreMetrics::warmup_steps},
    {metric_key::kWarmupSteady, &CoreMetrics::warmup_steady},
    {metric_key::kLossFirst, &CoreMetrics::loss_first},
    {metric_key::kLossLast, &CoreMetrics::loss_last},
    {metric_key::kSkippedSteps, &CoreMetrics::skipped_steps},
    {metric_key::kCudnnBenchmark, &CoreMetrics::cudnn_benchmark},
    {metric_key::kParamChecksum, &CoreMetrics::param_checksum},
    {metric_key::kPeakAllocatedBytes, &CoreMetrics::peak_allocated_bytes},
    {metric_key::kPeakReservedBytes, &CoreMetrics::peak_reserved_bytes},
    {metric_key::kHostPeakRssBytes, &CoreMetrics::host_peak_rss_bytes},
    {metric_key::kGpuOtherProcesses, &CoreMetrics::gpu_other_processes},
};

// Each read() takes json_number's value (absent unless a number or a boolean) as its type.
void read(std::optional<double>& out, std::optional<double> v) { out = v; }
void read(std::optional<std::int64_t>& out, std::optional<double> v) {
  if (v && std::isfinite(*v)) out = std::llround(*v);
}
void read(std::optional<bool>& out, std::optional<double> v) {
  if (v) out = *v != 0;
}

// Each write() sets the key as the runner has always written it.
void write(json& out, const char* key, const std::optional<double>& v) {
  if (v) out[key] = *v;
}
void write(json& out, const char* key, const std::optional<std::int64_t>& v) {
  if (v) out[key] = *v;
}
void write(json& out, const char* key, const std::optional<bool>& v) {
  if (v) out[key] = *v ? 1 : 0;
}

}  // namespace

CoreMetrics read_core_metrics(const json& metrics) {
  CoreMetrics c;
  for (const Field& f : kFields) {
    const std::optional<double> v = json_number(metrics, f.key);
    std::visit([&](auto member) { read(c.*member, v); }, f.member);
  }
  return c;
}

void write_core_metrics(const CoreMetrics& core, json& metrics) {
  if (!metrics.is_object()) metrics = json::object();
  for (const Field& f : kFields) {
    std::visit([&](auto member) { write(metrics, f.key, core.*member); }, f.member);
  }
}

}  // namespace orch
