// A script run's telemetry: the GPU's NVML sampler and the host's, running while the program
// runs. exec cannot mark the program's measured steps as they happen (they are in another
// process), so the window is set afterwards from the program's report.
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

class ScriptTelemetry {
 public:
  /// Starts what can run: the GPU's sampler where the run is on a GPU whose PCI bus id is known
  /// (else the reason it is not sampled), the host's whatever the device (a script's loader runs
  /// on its CPU). Nothing starts when the experiment turned telemetry off.
  void start(const RunSpec& spec, bool cuda, const std::string& pci_bus_id,
             const std::string& why_no_bus_id);
  /// Stops the samplers that run and keeps their records; a second call changes nothing.
  void stop();
  /// The measured steps ended at `written` (when the program wrote its report) and began
  /// `measure_s` before: the window the summaries cover, as for a built-in run.
  void set_measure_window(std::chrono::system_clock::time_point written, double measure_s);

  std::optional<TelemetryRecord> gpu;
  std::optional<HostTelemetryRecord> host;

 private:
  std::unique_ptr<NvmlSampler> sampler_;
  std::chrono::system_clock::time_point sampler_t0_;
  std::unique_ptr<HostSampler> host_sampler_;
  std::chrono::system_clock::time_point host_t0_;
};

}  // namespace orch
