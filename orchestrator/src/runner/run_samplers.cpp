#include "runner/run_samplers.h"

#include <algorithm>
#include <utility>

namespace orch {

void RunSamplers::start(const RunSpec& spec, const std::string& pci_bus_id,
                        const std::string& no_gpu) {
  const int interval = static_cast<int>(spec.telemetry.interval_ms);
  if (!spec.telemetry.enabled) {
    const std::string off = "telemetry disabled by the experiment (telemetry.enabled: false)";
    gpu = TelemetryRecord::unavailable(off, interval);
    host = HostTelemetryRecord::unavailable(off, interval);
    return;
  }
  if (!no_gpu.empty()) {
    gpu = TelemetryRecord::unavailable(no_gpu, interval);
  } else {
    SamplerOptions options;
    options.interval_ms = interval;
    options.pci_bus_id = pci_bus_id;
    sampler_ = std::make_unique<NvmlSampler>(options);
    if (sampler_->available()) {
      sampler_t0_ = std::chrono::system_clock::now();
      sampler_->start();
    } else {
      gpu = TelemetryRecord::unavailable(sampler_->unavailable_reason(), interval);
      sampler_.reset();
    }
  }
  host_sampler_ = std::make_unique<HostSampler>(HostSamplerOptions{interval, default_proc_root()});
  if (host_sampler_->available()) {
    host_t0_ = std::chrono::system_clock::now();
    host_sampler_->start();
  } else {
    host = HostTelemetryRecord::unavailable(host_sampler_->unavailable_reason(), interval);
    host_sampler_.reset();
  }
}

void RunSamplers::stop() {
  if (sampler_) {
    gpu = sampler_->stop();
    sampler_.reset();
  }
  if (host_sampler_) {
    host = host_sampler_->stop();
    host_sampler_.reset();
  }
}

void RunSamplers::set_measure_window(std::chrono::system_clock::time_point written,
                                     double measure_s) {
  auto window = [&](std::chrono::system_clock::time_point t0) {
    const double end_s = std::chrono::duration<double>(written - t0).count();
    return std::make_pair(std::max(0.0, end_s - measure_s), end_s);
  };
  if (gpu && gpu->available) gpu->measure_window_s = window(sampler_t0_);
  if (host && host->available) host->measure_window_s = window(host_t0_);
}

}  // namespace orch
