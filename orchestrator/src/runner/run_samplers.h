// A run's samplers: the GPU's (NVML) and the host's, started before its measured work and
// stopped after it. Built-in runs mark their measured steps on the samplers as they happen; a
// script run's steps are in another process, so its window is set afterwards from the report.
// The records outlive the samplers: a failed run still reports what was sampled (a lost GPU
// above all), and the sampling threads are joined by stop().
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "plan/run_spec.h"
#include "telemetry/host_sampler.h"
#include "telemetry/nvml_sampler.h"
#include "telemetry/telemetry_record.h"

namespace orch {

class RunSamplers {
 public:
  /// Starts what can run: the GPU's sampler for the GPU at `pci_bus_id` unless `no_gpu` says
  /// why there is none to sample (the run is on the CPU, its bus id is unknown), and the host's
  /// whatever the device (a loader runs on its CPU). Where one cannot run, its record says why;
  /// nothing starts when the experiment turned telemetry off.
  void start(const RunSpec& spec, const std::string& pci_bus_id, const std::string& no_gpu);
  /// Stops the samplers that run and keeps their records; a second call changes nothing.
  void stop();
  /// The measured steps ended at `written` and began `measure_s` before: the window the
  /// summaries cover (for a script run, whose steps orch cannot mark as they happen).
  void set_measure_window(std::chrono::system_clock::time_point written, double measure_s);

  /// While running (else null): for marking the measured steps.
  NvmlSampler* gpu_sampler() const { return sampler_.get(); }
  HostSampler* host_sampler() const { return host_sampler_.get(); }

  std::optional<TelemetryRecord> gpu;
  std::optional<HostTelemetryRecord> host;

 private:
  std::unique_ptr<NvmlSampler> sampler_;
  std::chrono::system_clock::time_point sampler_t0_;
  std::unique_ptr<HostSampler> host_sampler_;
  std::chrono::system_clock::time_point host_t0_;
};

}  // namespace orch
