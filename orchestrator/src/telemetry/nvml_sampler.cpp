// The NVML sampling thread (see nvml_sampler.h).
#include "telemetry/nvml_sampler.h"

#include <fmt/format.h>

namespace orch {

namespace {

using Clock = std::chrono::steady_clock;

// Room for ~7 minutes at the default 100 ms before the vector grows: a typical measured run
// never reallocates while sampling.
constexpr std::size_t kReservedSamples = 4096;

}  // namespace

NvmlSampler::NvmlSampler(SamplerOptions options) : options_(std::move(options)) {
  if (options_.interval_ms < 1) options_.interval_ms = 1;
  nvml_ = NvmlLibrary::open(reason_);
  if (!nvml_) return;
  device_ = nvml_->device_by_pci_bus_id(options_.pci_bus_id, reason_);
  if (!device_) nvml_.reset();
}

NvmlSampler::~NvmlSampler() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
}

double NvmlSampler::seconds_since_start() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void NvmlSampler::start() {
  start_ = Clock::now();
  if (!available() || thread_.joinable()) return;
  samples_.reserve(kReservedSamples);
  thread_ = std::thread([this] { run(); });
}

void NvmlSampler::mark_measure_begin() {
  measure_begin_ns_.store(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count(),
      std::memory_order_relaxed);
}

void NvmlSampler::mark_measure_end() {
  measure_end_ns_.store(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count(),
      std::memory_order_relaxed);
}

void NvmlSampler::run() {
  const auto interval = std::chrono::milliseconds(options_.interval_ms);
  auto next = start_;
  while (true) {
    take_sample(seconds_since_start());
    if (gpu_lost()) return;
    // Ticks stay on the grid start + k * interval; a slow sample (the two PCIe queries take
    // 20 ms each inside NVML) skips the ticks it overran instead of bunching samples up.
    const auto now = Clock::now();
    do next += interval;
    while (next <= now);
    std::unique_lock lock(mutex_);
    if (wake_.wait_until(lock, next, [this] { return stop_; })) return;
  }
}

void NvmlSampler::note_missing(GpuField field, const std::string& why) {
  std::string& slot = why_[static_cast<std::size_t>(field)];
  if (slot.empty()) slot = why;
}

bool NvmlSampler::failed(GpuField field, nvml::Return r) {
  if (nvml::is_gpu_lost(r)) {
    gpu_lost_reason_ = nvml_->describe(r);
    gpu_lost_.store(true, std::memory_order_relaxed);
    return false;
  }
  if (r == nvml::kErrorNotSupported) off_[static_cast<std::size_t>(field)] = true;
  // Described once: a field failing in every sample must not allocate in every sample.
  if (why_[static_cast<std::size_t>(field)].empty()) note_missing(field, nvml_->describe(r));
  return true;
}

bool NvmlSampler::is_off(GpuField field) const { return off_[static_cast<std::size_t>(field)]; }

bool NvmlSampler::absent(GpuField field, const void* fn, const char* symbol) {
  if (fn) return false;
  off_[static_cast<std::size_t>(field)] = true;
  note_missing(field, fmt::format("{} does not export {}", nvml_->path(), symbol));
  return true;
}

template <class Query>
bool NvmlSampler::sample_field(GpuSample& s, GpuField field, const void* fn, const char* symbol,
                               Query query) {
  if (is_off(field) || absent(field, fn, symbol)) return true;
  double value = 0;
  const nvml::Return r = query(value);
  if (r != nvml::kSuccess) return failed(field, r);
  s.set(field, value);
  return true;
}

bool NvmlSampler::sample_utilization(GpuSample& s) {
  const NvmlLibrary& lib = *nvml_;
  // One query for two fields; kGpuUtilPct's switch governs both.
  if (is_off(GpuField::kGpuUtilPct)) return true;
  if (!lib.device_get_utilization_rates) {
    absent(GpuField::kGpuUtilPct, nullptr, "nvmlDeviceGetUtilizationRates");
    absent(GpuField::kMemUtilPct, nullptr, "nvmlDeviceGetUtilizationRates");
    return true;
  }
  nvml::Utilization u{};
  if (const auto r = lib.device_get_utilization_rates(device_, &u); r != nvml::kSuccess) {
    if (!failed(GpuField::kGpuUtilPct, r)) return false;
    failed(GpuField::kMemUtilPct, r);
    return true;
  }
  s.set(GpuField::kGpuUtilPct, u.gpu);
  s.set(GpuField::kMemUtilPct, u.memory);
  return true;
}

bool NvmlSampler::sample_power(GpuSample& s) {
  const NvmlLibrary& lib = *nvml_;
  return sample_field(s, GpuField::kPowerW,
                      reinterpret_cast<const void*>(lib.device_get_power_usage),
                      "nvmlDeviceGetPowerUsage", [&](double& value) {
                        unsigned int mw = 0;
                        const auto r = lib.device_get_power_usage(device_, &mw);
                        value = mw / 1000.0;  // NVML reports milliwatts
                        return r;
                      });
}

bool NvmlSampler::sample_clocks(GpuSample& s) {
  const NvmlLibrary& lib = *nvml_;
  for (const auto& [field, clock] : {std::pair{GpuField::kSmClockMhz, nvml::kClockSm},
                                     std::pair{GpuField::kMemClockMhz, nvml::kClockMem}}) {
    const bool go_on =
        sample_field(s, field, reinterpret_cast<const void*>(lib.device_get_clock_info),
                     "nvmlDeviceGetClockInfo", [&](double& value) {
                       unsigned int mhz = 0;
                       const auto r = lib.device_get_clock_info(device_, clock, &mhz);
                       value = mhz;
                       return r;
                     });
    if (!go_on) return false;
  }
  return true;
}

bool NvmlSampler::sample_temperature(GpuSample& s) {
  const NvmlLibrary& lib = *nvml_;
  return sample_field(
      s, GpuField::kTemperatureC, reinterpret_cast<const void*>(lib.device_get_temperature),
      "nvmlDeviceGetTemperature", [&](double& value) {
        unsigned int c = 0;
        const auto r = lib.device_get_temperature(device_, nvml::kTemperatureGpu, &c);
        value = c;
        return r;
      });
}

bool NvmlSampler::sample_memory_used(GpuSample& s) {
  const NvmlLibrary& lib = *nvml_;
  return sample_field(s, GpuField::kMemoryUsedBytes,
                      reinterpret_cast<const void*>(lib.device_get_memory_info),
                      "nvmlDeviceGetMemoryInfo", [&](double& value) {
                        nvml::Memory m{};
                        const auto r = lib.device_get_memory_info(device_, &m);
                        value = static_cast<double>(m.used);
                        return r;
                      });
}

bool NvmlSampler::sample_pcie_throughput(GpuSample& s) {
  const NvmlLibrary& lib = *nvml_;
  for (const auto& [field, counter] :
       {std::pair{GpuField::kPcieRxBytesPerS, nvml::kPcieUtilRxBytes},
        std::pair{GpuField::kPcieTxBytesPerS, nvml::kPcieUtilTxBytes}}) {
    const bool go_on =
        sample_field(s, field, reinterpret_cast<const void*>(lib.device_get_pcie_throughput),
                     "nvmlDeviceGetPcieThroughput", [&](double& value) {
                       unsigned int kb_per_s = 0;
                       const auto r = lib.device_get_pcie_throughput(device_, counter, &kb_per_s);
                       value = kb_per_s * 1024.0;  // NVML reports KB/s (1 KB granularity)
                       return r;
                     });
    if (!go_on) return false;
  }
  return true;
}

bool NvmlSampler::sample_throttle_reasons(GpuSample& s) {
  const NvmlLibrary& lib = *nvml_;
  return sample_field(s, GpuField::kThrottleReasons,
                      reinterpret_cast<const void*>(lib.device_get_clocks_event_reasons),
                      "nvmlDeviceGetCurrentClocksEventReasons", [&](double& value) {
                        unsigned long long reasons = 0;
                        const auto r = lib.device_get_clocks_event_reasons(device_, &reasons);
                        value = static_cast<double>(reasons);
                        return r;
                      });
}

void NvmlSampler::take_sample(double t_s) {
  GpuSample s;
  s.t_s = t_s;
  // A lost GPU ends the sample at the query that found it, and that sample is not kept.
  const bool complete = sample_utilization(s) && sample_power(s) && sample_clocks(s) &&
                        sample_temperature(s) && sample_memory_used(s) &&
                        sample_pcie_throughput(s) && sample_throttle_reasons(s);
  if (!complete) return;
  // A field switched off earlier is null in every later sample; its reason is already kept.
  samples_.push_back(s);
}

TelemetryRecord NvmlSampler::stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  TelemetryRecord r;
  r.interval_ms = options_.interval_ms;
  r.available = available();
  r.reason = available() ? "" : reason_;
  const auto b = measure_begin_ns_.load(), e = measure_end_ns_.load();
  if (b >= 0 && e >= b) r.measure_window_s = std::pair{b / 1e9, e / 1e9};
  r.samples = std::move(samples_);
  for (int i = 0; i < kGpuFieldCount; ++i) {
    if (!why_[static_cast<std::size_t>(i)].empty()) {
      r.missing[std::string(field_name(static_cast<GpuField>(i)))] =
          why_[static_cast<std::size_t>(i)];
    }
  }
  r.gpu_lost = gpu_lost();
  r.gpu_lost_reason = gpu_lost_reason_;
  return r;
}

}  // namespace orch
