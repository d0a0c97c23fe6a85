#include "runner/script_telemetry.h"

#include <algorithm>
#include <utility>

namespace orch {

void ScriptTelemetry::start(const RunSpec& spec, bool cuda, const std::string& pci_bus_id,
                            const std::string& why_no_bus_id) {
  const int interval = static_cast<int>(spec.telemetry.interval_ms);
  const std::string disabled = "telemetry disabled by the experiment (telemetry.enabled: false)";
  if (!spec.telemetry.enabled) {
    gpu = TelemetryRecord::unavailable(disabled, interval);
  } else if (!cuda) {
    gpu = TelemetryRecord::unavailable("the run's device is the CPU", interval);
  } else if (pci_bus_id.empty()) {
    gpu = TelemetryRecord::unavailable("the GPU's PCI bus id is unknown (" + why_no_bus_id + ")",
                                       interval);
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

  if (!spec.telemetry.enabled) {
    host = HostTelemetryRecord::unavailable(disabled, interval);
    return;
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

void ScriptTelemetry::stop() {
  if (sampler_) {
    gpu = sampler_->stop();
    sampler_.reset();
  }
  if (host_sampler_) {
    host = host_sampler_->stop();
    host_sampler_.reset();
  }
}

void ScriptTelemetry::set_measure_window(std::chrono::system_clock::time_point written,
                                         double measure_s) {
  auto window = [&](std::chrono::system_clock::time_point t0) {
    const double end_s = std::chrono::duration<double>(written - t0).count();
    return std::make_pair(std::max(0.0, end_s - measure_s), end_s);
  };
  if (gpu && gpu->available) gpu->measure_window_s = window(sampler_t0_);
  if (host && host->available) host->measure_window_s = window(host_t0_);
}

}  // namespace orch
