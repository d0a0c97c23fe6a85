// The few NVML types, constants and function signatures orch uses, declared here because
// neither the development nor the GPU machine has nvml.h, and NVML is loaded at run time with
// dlopen (telemetry/nvml_library.h) so orch runs where no driver exists.
//
// Copied faithfully from NVIDIA's nvml.h (CUDA 12.9, nvidia-nvml-dev-cu12 12.9.79; the same
// values and layouts hold from R450 to R580): nvmlReturn_t codes, nvmlUtilization_t,
// nvmlMemory_t (v1), nvmlProcessInfo_t (v2 layout, used by the _v2 and _v3 process queries),
// clock types, PCIe counters, and the versioned symbol names the header's #defines map the
// plain names to (nvmlInit -> nvmlInit_v2, nvmlDeviceGetCount -> _v2, ...).
// Only C types: the library's ABI is plain C.
#pragma once

#include <cstdint>

namespace orch::nvml {

using Return = int;                            // nvmlReturn_t (an enum of int size)
constexpr Return kSuccess = 0;                 // NVML_SUCCESS
constexpr Return kErrorUninitialized = 1;      // NVML_ERROR_UNINITIALIZED
constexpr Return kErrorInvalidArgument = 2;    // NVML_ERROR_INVALID_ARGUMENT
constexpr Return kErrorNotSupported = 3;       // NVML_ERROR_NOT_SUPPORTED
constexpr Return kErrorNoPermission = 4;       // NVML_ERROR_NO_PERMISSION
constexpr Return kErrorNotFound = 6;           // NVML_ERROR_NOT_FOUND
constexpr Return kErrorInsufficientSize = 7;   // NVML_ERROR_INSUFFICIENT_SIZE
constexpr Return kErrorDriverNotLoaded = 9;    // NVML_ERROR_DRIVER_NOT_LOADED
constexpr Return kErrorTimeout = 10;           // NVML_ERROR_TIMEOUT
constexpr Return kErrorLibraryNotFound = 12;   // NVML_ERROR_LIBRARY_NOT_FOUND
constexpr Return kErrorFunctionNotFound = 13;  // NVML_ERROR_FUNCTION_NOT_FOUND
constexpr Return kErrorGpuIsLost = 15;         // NVML_ERROR_GPU_IS_LOST
constexpr Return kErrorResetRequired = 16;     // NVML_ERROR_RESET_REQUIRED
constexpr Return kErrorNoData = 21;            // NVML_ERROR_NO_DATA
constexpr Return kErrorGpuNotFound = 28;       // NVML_ERROR_GPU_NOT_FOUND
constexpr Return kErrorUnknown = 999;          // NVML_ERROR_UNKNOWN

/// NVML_ERROR_GPU_IS_LOST and NVML_ERROR_RESET_REQUIRED: the GPU is unusable until reset.
constexpr bool is_gpu_lost(Return r) { return r == kErrorGpuIsLost || r == kErrorResetRequired; }

/// "NVML_ERROR_NOT_SUPPORTED" for a known code, "NVML error 123" otherwise.
const char* error_name(Return r);

struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t

struct Utilization {    // nvmlUtilization_t
  unsigned int gpu;     // percent of time a kernel was executing, over the last sample period
  unsigned int memory;  // percent of time device memory was read or written
};

struct Memory {  // nvmlMemory_t (v1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct ProcessInfo {  // nvmlProcessInfo_t == nvmlProcessInfo_v2_t
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// nvmlClockType_t
constexpr int kClockGraphics = 0;  // NVML_CLOCK_GRAPHICS
constexpr int kClockSm = 1;        // NVML_CLOCK_SM
constexpr int kClockMem = 2;       // NVML_CLOCK_MEM
// nvmlTemperatureSensors_t
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
// nvmlPcieUtilCounter_t (values in KB/s, measured by NVML over a 20 ms window)
constexpr int kPcieUtilTxBytes = 0;  // NVML_PCIE_UTIL_TX_BYTES
constexpr int kPcieUtilRxBytes = 1;  // NVML_PCIE_UTIL_RX_BYTES
// nvmlEnableState_t
constexpr int kFeatureDisabled = 0;  // NVML_FEATURE_DISABLED
constexpr int kFeatureEnabled = 1;   // NVML_FEATURE_ENABLED

// Buffer sizes from nvml.h.
constexpr unsigned kSystemDriverVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
constexpr unsigned kDeviceUuidBufferSize = 96;           // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kDeviceNameBufferSize = 96;           // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kPciBusIdBufferSize = 32;             // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE

// Function signatures, by the symbol name exported by libnvidia-ml.so.1.
using InitFn = Return (*)();                                       // nvmlInit_v2
using ShutdownFn = Return (*)();                                   // nvmlShutdown
using ErrorStringFn = const char* (*)(Return);                     // nvmlErrorString
using SystemGetDriverVersionFn = Return (*)(char*, unsigned int);  // nvmlSystemGetDriverVersion
using SystemGetProcessNameFn = Return (*)(unsigned int, char*, unsigned int);
using DeviceGetCountFn = Return (*)(unsigned int*);                    // nvmlDeviceGetCount_v2
using DeviceGetHandleByIndexFn = Return (*)(unsigned int, Device*);    // ..._v2
using DeviceGetHandleByPciBusIdFn = Return (*)(const char*, Device*);  // ..._v2
using DeviceGetStringFn = Return (*)(Device, char*, unsigned int);     // GetName, GetUUID
using DeviceGetUtilizationRatesFn = Return (*)(Device, Utilization*);
using DeviceGetMemoryInfoFn = Return (*)(Device, Memory*);  // nvmlDeviceGetMemoryInfo (v1)
using DeviceGetUintFn = Return (*)(Device, unsigned int*);  // PowerUsage (mW), PCIe link gen/width
using DeviceGetClockInfoFn = Return (*)(Device, int, unsigned int*);       // MHz
using DeviceGetTemperatureFn = Return (*)(Device, int, unsigned int*);     // degrees C
using DeviceGetPcieThroughputFn = Return (*)(Device, int, unsigned int*);  // KB/s
using DeviceGetReasonsFn = Return (*)(Device, unsigned long long*);        // clocks event reasons
using DeviceGetEnableStateFn = Return (*)(Device, int*);  // nvmlDeviceGetPersistenceMode
using DeviceGetProcessesFn = Return (*)(Device, unsigned int*, ProcessInfo*);  // _v3 / _v2

}  // namespace orch::nvml
