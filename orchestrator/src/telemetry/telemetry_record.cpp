// The telemetry section of the result document and its summaries (see telemetry_record.h).
#include "telemetry/telemetry_record.h"

#include <algorithm>
#include <cstdint>

#include "result/core_metrics.h"

namespace orch {

namespace {

using nlohmann::json;

json field_value(const GpuSample& s, GpuField f) {
  if (!s.has(f)) return nullptr;
  if (field_is_integral(f)) return static_cast<std::int64_t>(s.get(f));
  return s.get(f);
}

/// Mean and maximum of one field over the samples in [t0, t1], where it has a value.
struct Stat {
  double sum = 0, max = 0;
  std::int64_t n = 0;
  void add(double v) {
    max = n == 0 ? v : std::max(max, v);
    sum += v;
    ++n;
  }
  double mean() const { return sum / static_cast<double>(n); }
};

}  // namespace

TelemetryRecord TelemetryRecord::unavailable(std::string why, int interval_ms) {
  TelemetryRecord r;
  r.available = false;
  r.reason = std::move(why);
  r.interval_ms = interval_ms;
  return r;
}

json telemetry_json(const TelemetryRecord& record) {
  json out;
  out["available"] = record.available;
  out["reason"] = record.reason.empty() ? json(nullptr) : json(record.reason);
  out["source"] = "nvml";
  out["interval_ms"] = record.interval_ms;
  if (record.measure_window_s) {
    out["measure_window_s"] = {record.measure_window_s->first, record.measure_window_s->second};
  } else {
    out["measure_window_s"] = nullptr;
  }
  json samples = json::array();
  for (const GpuSample& s : record.samples) {
    json j;
    j["t_s"] = s.t_s;
    for (int i = 0; i < kGpuFieldCount; ++i) {
      const auto f = static_cast<GpuField>(i);
      j[std::string(field_name(f))] = field_value(s, f);
    }
    samples.push_back(std::move(j));
  }
  out["samples"] = std::move(samples);
  json missing = json::object();
  for (const auto& [field, why] : record.missing) missing[field] = why;
  out["missing"] = std::move(missing);
  out["gpu_lost"] = record.gpu_lost;
  if (record.gpu_lost) out["gpu_lost_reason"] = record.gpu_lost_reason;
  return out;
}

json telemetry_metrics(const TelemetryRecord& record) {
  json out = json::object();
  if (!record.available || !record.measure_window_s) return out;
  const auto [t0, t1] = *record.measure_window_s;
  std::array<Stat, kGpuFieldCount> stats{};
  std::int64_t in_window = 0;
  for (const GpuSample& s : record.samples) {
    if (s.t_s < t0 || s.t_s > t1) continue;
    ++in_window;
    for (int i = 0; i < kGpuFieldCount; ++i) {
      if (s.has(static_cast<GpuField>(i))) stats[static_cast<std::size_t>(i)].add(s.value[i]);
    }
  }
  auto stat = [&](GpuField f) -> const Stat& { return stats[static_cast<std::size_t>(f)]; };
  auto put_mean = [&](const char* name, GpuField f) {
    if (stat(f).n > 0) out[name] = stat(f).mean();
  };
  auto put_max = [&](const char* name, GpuField f, bool integral) {
    if (stat(f).n == 0) return;
    if (integral) {
      out[name] = static_cast<std::int64_t>(stat(f).max);
    } else {
      out[name] = stat(f).max;
    }
  };
  put_mean(metric_key::kGpuUtilMeanPct, GpuField::kGpuUtilPct);
  put_mean(metric_key::kMemUtilMeanPct, GpuField::kMemUtilPct);
  put_mean(metric_key::kPowerMeanW, GpuField::kPowerW);
  put_max(metric_key::kPowerMaxW, GpuField::kPowerW, false);
  put_mean(metric_key::kSmClockMeanMhz, GpuField::kSmClockMhz);
  put_max(metric_key::kTemperatureMaxC, GpuField::kTemperatureC, true);
  put_max(metric_key::kMemoryUsedMaxBytes, GpuField::kMemoryUsedBytes, true);
  put_mean(metric_key::kPcieRxMeanBytesPerS, GpuField::kPcieRxBytesPerS);
  put_mean("pcie_tx_mean_bytes_per_s", GpuField::kPcieTxBytesPerS);
  out["telemetry_samples"] = in_window;
  return out;
}

}  // namespace orch
