// Loading NVML with dlopen and opening a session (see nvml_library.h).
#include "telemetry/nvml_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace orch {

namespace nvml {

const char* error_name(Return r) {
  switch (r) {
    case kSuccess:
      return "NVML_SUCCESS";
    case kErrorUninitialized:
      return "NVML_ERROR_UNINITIALIZED";
    case kErrorInvalidArgument:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case kErrorNotSupported:
      return "NVML_ERROR_NOT_SUPPORTED";
    case kErrorNoPermission:
      return "NVML_ERROR_NO_PERMISSION";
    case kErrorNotFound:
      return "NVML_ERROR_NOT_FOUND";
    case kErrorInsufficientSize:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case kErrorDriverNotLoaded:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case kErrorTimeout:
      return "NVML_ERROR_TIMEOUT";
    case kErrorLibraryNotFound:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case kErrorFunctionNotFound:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case kErrorGpuIsLost:
      return "NVML_ERROR_GPU_IS_LOST";
    case kErrorResetRequired:
      return "NVML_ERROR_RESET_REQUIRED";
    case kErrorNoData:
      return "NVML_ERROR_NO_DATA";
    case kErrorGpuNotFound:
      return "NVML_ERROR_GPU_NOT_FOUND";
    case kErrorUnknown:
      return "NVML_ERROR_UNKNOWN";
    default:
      return "NVML error";
  }
}

}  // namespace nvml

namespace {

template <class Fn>
Fn symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

std::string nvml_library_path() {
  const char* override_path = std::getenv(kNvmlLibraryVariable);
  return override_path && *override_path ? override_path : "libnvidia-ml.so.1";
}

// The entry points nothing works without. Returns the name of the first one `handle` lacks, or
// nullptr when it has them all.
const char* bind_required(NvmlLibrary& lib, void* handle, nvml::InitFn& init) {
  init = symbol<nvml::InitFn>(handle, "nvmlInit_v2");
  lib.shutdown = symbol<nvml::ShutdownFn>(handle, "nvmlShutdown");
  lib.device_get_count = symbol<nvml::DeviceGetCountFn>(handle, "nvmlDeviceGetCount_v2");
  lib.device_get_handle_by_index =
      symbol<nvml::DeviceGetHandleByIndexFn>(handle, "nvmlDeviceGetHandleByIndex_v2");
  lib.device_get_handle_by_pci_bus_id =
      symbol<nvml::DeviceGetHandleByPciBusIdFn>(handle, "nvmlDeviceGetHandleByPciBusId_v2");
  for (const auto& [fn, name] :
       {std::pair<bool, const char*>{init != nullptr, "nvmlInit_v2"},
        {lib.shutdown != nullptr, "nvmlShutdown"},
        {lib.device_get_count != nullptr, "nvmlDeviceGetCount_v2"},
        {lib.device_get_handle_by_index != nullptr, "nvmlDeviceGetHandleByIndex_v2"},
        {lib.device_get_handle_by_pci_bus_id != nullptr, "nvmlDeviceGetHandleByPciBusId_v2"}}) {
    if (!fn) return name;
  }
  return nullptr;
}

// Optional, because older or newer drivers lack some of them; callers treat a null one as
// NOT_SUPPORTED.
void bind_optional(NvmlLibrary& lib, void* handle) {
  lib.error_string = symbol<nvml::ErrorStringFn>(handle, "nvmlErrorString");
  lib.system_get_driver_version =
      symbol<nvml::SystemGetDriverVersionFn>(handle, "nvmlSystemGetDriverVersion");
  lib.system_get_process_name =
      symbol<nvml::SystemGetProcessNameFn>(handle, "nvmlSystemGetProcessName");
  lib.device_get_name = symbol<nvml::DeviceGetStringFn>(handle, "nvmlDeviceGetName");
  lib.device_get_uuid = symbol<nvml::DeviceGetStringFn>(handle, "nvmlDeviceGetUUID");
  lib.device_get_utilization_rates =
      symbol<nvml::DeviceGetUtilizationRatesFn>(handle, "nvmlDeviceGetUtilizationRates");
  lib.device_get_memory_info =
      symbol<nvml::DeviceGetMemoryInfoFn>(handle, "nvmlDeviceGetMemoryInfo");
  lib.device_get_power_usage = symbol<nvml::DeviceGetUintFn>(handle, "nvmlDeviceGetPowerUsage");
  lib.device_get_clock_info = symbol<nvml::DeviceGetClockInfoFn>(handle, "nvmlDeviceGetClockInfo");
  lib.device_get_temperature =
      symbol<nvml::DeviceGetTemperatureFn>(handle, "nvmlDeviceGetTemperature");
  lib.device_get_pcie_throughput =
      symbol<nvml::DeviceGetPcieThroughputFn>(handle, "nvmlDeviceGetPcieThroughput");
  lib.device_get_clocks_event_reasons =
      symbol<nvml::DeviceGetReasonsFn>(handle, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!lib.device_get_clocks_event_reasons) {
    lib.device_get_clocks_event_reasons =
        symbol<nvml::DeviceGetReasonsFn>(handle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  lib.device_get_curr_pcie_link_generation =
      symbol<nvml::DeviceGetUintFn>(handle, "nvmlDeviceGetCurrPcieLinkGeneration");
  lib.device_get_curr_pcie_link_width =
      symbol<nvml::DeviceGetUintFn>(handle, "nvmlDeviceGetCurrPcieLinkWidth");
  lib.device_get_max_pcie_link_generation =
      symbol<nvml::DeviceGetUintFn>(handle, "nvmlDeviceGetMaxPcieLinkGeneration");
  lib.device_get_max_pcie_link_width =
      symbol<nvml::DeviceGetUintFn>(handle, "nvmlDeviceGetMaxPcieLinkWidth");
  lib.device_get_persistence_mode =
      symbol<nvml::DeviceGetEnableStateFn>(handle, "nvmlDeviceGetPersistenceMode");
  lib.device_get_compute_running_processes =
      symbol<nvml::DeviceGetProcessesFn>(handle, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!lib.device_get_compute_running_processes) {
    lib.device_get_compute_running_processes =
        symbol<nvml::DeviceGetProcessesFn>(handle, "nvmlDeviceGetComputeRunningProcesses_v2");
  }
}

}  // namespace

std::unique_ptr<NvmlLibrary> NvmlLibrary::open(std::string& reason) {
  const std::string path = nvml_library_path();
  // RTLD_LOCAL: NVML's symbols stay out of the global namespace; RTLD_NOW: a broken library
  // fails here, not in the middle of a run.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    reason = fmt::format("NVML library {} could not be loaded (no NVIDIA driver?): {}", path,
                         err ? err : "unknown dlopen error");
    return nullptr;
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary);
  lib->handle_ = handle;
  lib->path_ = path;

  nvml::InitFn init = nullptr;
  if (const char* missing = bind_required(*lib, handle, init)) {
    reason = fmt::format("NVML library {} lacks {} (driver too old?)", path, missing);
    lib->shutdown = nullptr;  // never initialised: the destructor must not shut down
    return nullptr;
  }
  bind_optional(*lib, handle);

  if (const nvml::Return r = init(); r != nvml::kSuccess) {
    reason = fmt::format("nvmlInit failed: {}", lib->describe(r));
    lib->shutdown = nullptr;  // nothing to shut down
    return nullptr;
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  // Never throws: a failing shutdown only means the driver already went away.
  if (shutdown) shutdown();
  if (handle_) dlclose(handle_);
}

std::string NvmlLibrary::describe(nvml::Return r) const {
  std::string out = nvml::error_name(r);
  if (out == "NVML error") out += " " + std::to_string(r);
  if (error_string) {
    if (const char* text = error_string(r); text && *text) out += fmt::format(" ({})", text);
  }
  return out;
}

nvml::Device NvmlLibrary::device_by_pci_bus_id(const std::string& bus_id,
                                               std::string& reason) const {
  nvml::Device device = nullptr;
  const nvml::Return r = device_get_handle_by_pci_bus_id(bus_id.c_str(), &device);
  if (r != nvml::kSuccess) {
    reason = fmt::format("no NVML device at PCI bus id {}: {}", bus_id, describe(r));
    return nullptr;
  }
  return device;
}

}  // namespace orch
