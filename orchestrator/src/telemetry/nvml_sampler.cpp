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

void NvmlSampler::take_sample(double t_s) {
  GpuSample s;
  s.t_s = t_s;
  const NvmlLibrary& lib = *nvml_;
  auto is_off = [&](GpuField f) { return off_[static_cast<std::size_t>(f)]; };
  // An entry point this driver's NVML does not export is as good as NOT_SUPPORTED.
  auto absent = [&](GpuField f, const void* fn, const char* symbol) {
    if (fn) return false;
    off_[static_cast<std::size_t>(f)] = true;
    note_missing(f, fmt::format("{} does not export {}", lib.path(), symbol));
    return true;
  };

  // Utilization: one query for two fields; kGpuUtilPct's switch governs both.
  if (!is_off(GpuField::kGpuUtilPct)) {
    if (!lib.device_get_utilization_rates) {
      absent(GpuField::kGpuUtilPct, nullptr, "nvmlDeviceGetUtilizationRates");
      absent(GpuField::kMemUtilPct, nullptr, "nvmlDeviceGetUtilizationRates");
    } else {
      nvml::Utilization u{};
      if (const auto r = lib.device_get_utilization_rates(device_, &u); r == nvml::kSuccess) {
        s.set(GpuField::kGpuUtilPct, u.gpu);
        s.set(GpuField::kMemUtilPct, u.memory);
      } else {
        if (!failed(GpuField::kGpuUtilPct, r)) return;
        failed(GpuField::kMemUtilPct, r);
      }
    }
  }

  if (!is_off(GpuField::kPowerW) &&
      !absent(GpuField::kPowerW, reinterpret_cast<const void*>(lib.device_get_power_usage),
              "nvmlDeviceGetPowerUsage")) {
    unsigned int mw = 0;
    if (const auto r = lib.device_get_power_usage(device_, &mw); r == nvml::kSuccess) {
      s.set(GpuField::kPowerW, mw / 1000.0);  // NVML reports milliwatts
    } else if (!failed(GpuField::kPowerW, r)) {
      return;
    }
  }

  for (const auto& [field, clock] : {std::pair{GpuField::kSmClockMhz, nvml::kClockSm},
                                     std::pair{GpuField::kMemClockMhz, nvml::kClockMem}}) {
    if (is_off(field) || absent(field, reinterpret_cast<const void*>(lib.device_get_clock_info),
                                "nvmlDeviceGetClockInfo")) {
      continue;
    }
    unsigned int mhz = 0;
    if (const auto r = lib.device_get_clock_info(device_, clock, &mhz); r == nvml::kSuccess) {
      s.set(field, mhz);
    } else if (!failed(field, r)) {
      return;
    }
  }

  if (!is_off(GpuField::kTemperatureC) &&
      !absent(GpuField::kTemperatureC, reinterpret_cast<const void*>(lib.device_get_temperature),
              "nvmlDeviceGetTemperature")) {
    unsigned int c = 0;
    if (const auto r = lib.device_get_temperature(device_, nvml::kTemperatureGpu, &c);
        r == nvml::kSuccess) {
      s.set(GpuField::kTemperatureC, c);
    } else if (!failed(GpuField::kTemperatureC, r)) {
      return;
    }
  }

  if (!is_off(GpuField::kMemoryUsedBytes) &&
      !absent(GpuField::kMemoryUsedBytes, reinterpret_cast<const void*>(lib.device_get_memory_info),
              "nvmlDeviceGetMemoryInfo")) {
    nvml::Memory m{};
    if (const auto r = lib.device_get_memory_info(device_, &m); r == nvml::kSuccess) {
      s.set(GpuField::kMemoryUsedBytes, static_cast<double>(m.used));
    } else if (!failed(GpuField::kMemoryUsedBytes, r)) {
      return;
    }
  }

  for (const auto& [field, counter] :
       {std::pair{GpuField::kPcieRxBytesPerS, nvml::kPcieUtilRxBytes},
        std::pair{GpuField::kPcieTxBytesPerS, nvml::kPcieUtilTxBytes}}) {
    if (is_off(field) ||
        absent(field, reinterpret_cast<const void*>(lib.device_get_pcie_throughput),
               "nvmlDeviceGetPcieThroughput")) {
      continue;
    }
    unsigned int kb_per_s = 0;
    if (const auto r = lib.device_get_pcie_throughput(device_, counter, &kb_per_s);
        r == nvml::kSuccess) {
      s.set(field, kb_per_s * 1024.0);  // NVML reports KB/s (1 KB granularity)
    } else if (!failed(field, r)) {
      return;
    }
  }

  if (!is_off(GpuField::kThrottleReasons) &&
      !absent(GpuField::kThrottleReasons,
              reinterpret_cast<const void*>(lib.device_get_clocks_event_reasons),
              "nvmlDeviceGetCurrentClocksEventReasons")) {
    unsigned long long reasons = 0;
    if (const auto r = lib.device_get_clocks_event_reasons(device_, &reasons);
        r == nvml::kSuccess) {
      s.set(GpuField::kThrottleReasons, static_cast<double>(reasons));
    } else if (!failed(GpuField::kThrottleReasons, r)) {
      return;
    }
  }

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
