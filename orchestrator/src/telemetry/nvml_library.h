// NvmlLibrary: one NVML session, loaded at run time with dlopen so that orch runs (without
// telemetry) where no NVIDIA driver is installed.
//
// The library is libnvidia-ml.so.1 unless ORCH_NVML_LIBRARY names another file (tests point it
// at a fake NVML). open() never throws: a missing library, a missing symbol, or nvmlInit
// failing gives nullptr and a sentence saying why. The session is shut down (nvmlShutdown,
// reference counted by NVML itself) and the library closed when the object goes away.
#pragma once

#include <memory>
#include <string>

#include "telemetry/nvml_api.h"

namespace orch {

/// The environment variable that overrides which NVML library is loaded.
inline constexpr const char* kNvmlLibraryVariable = "ORCH_NVML_LIBRARY";

class NvmlLibrary {
 public:
  /// nullptr with `reason` filled when NVML cannot be used on this machine.
  static std::unique_ptr<NvmlLibrary> open(std::string& reason);

  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  /// "NVML_ERROR_NOT_SUPPORTED (Not Supported)": the code's name plus NVML's own text.
  std::string describe(nvml::Return r) const;

  /// The NVML device whose PCI bus id is `bus_id` ("0000:3b:00.0"); on failure nullptr and
  /// `reason` says why.
  nvml::Device device_by_pci_bus_id(const std::string& bus_id, std::string& reason) const;

  // The entry points. Required ones are never null; optional ones (newer or older drivers
  // lack some) may be, and callers treat a null one as NOT_SUPPORTED.
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;                          // optional
  nvml::SystemGetDriverVersionFn system_get_driver_version = nullptr;  // optional
  nvml::SystemGetProcessNameFn system_get_process_name = nullptr;      // optional
  nvml::DeviceGetCountFn device_get_count = nullptr;
  nvml::DeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;
  nvml::DeviceGetHandleByPciBusIdFn device_get_handle_by_pci_bus_id = nullptr;
  nvml::DeviceGetStringFn device_get_name = nullptr;                         // optional
  nvml::DeviceGetStringFn device_get_uuid = nullptr;                         // optional
  nvml::DeviceGetUtilizationRatesFn device_get_utilization_rates = nullptr;  // optional
  nvml::DeviceGetMemoryInfoFn device_get_memory_info = nullptr;              // optional
  nvml::DeviceGetUintFn device_get_power_usage = nullptr;                    // optional
  nvml::DeviceGetClockInfoFn device_get_clock_info = nullptr;                // optional
  nvml::DeviceGetTemperatureFn device_get_temperature = nullptr;             // optional
  nvml::DeviceGetPcieThroughputFn device_get_pcie_throughput = nullptr;      // optional
  /// nvmlDeviceGetCurrentClocksEventReasons, or on drivers before R535 its older name
  /// nvmlDeviceGetCurrentClocksThrottleReasons (same signature, same bits).
  nvml::DeviceGetReasonsFn device_get_clocks_event_reasons = nullptr;    // optional
  nvml::DeviceGetUintFn device_get_curr_pcie_link_generation = nullptr;  // optional
  nvml::DeviceGetUintFn device_get_curr_pcie_link_width = nullptr;       // optional
  nvml::DeviceGetUintFn device_get_max_pcie_link_generation = nullptr;   // optional
  nvml::DeviceGetUintFn device_get_max_pcie_link_width = nullptr;        // optional
  nvml::DeviceGetEnableStateFn device_get_persistence_mode = nullptr;    // optional
  /// nvmlDeviceGetComputeRunningProcesses_v3, else _v2 (same nvmlProcessInfo_t layout).
  nvml::DeviceGetProcessesFn device_get_compute_running_processes = nullptr;  // optional

  /// The file that was loaded (for messages).
  const std::string& path() const { return path_; }

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace orch
