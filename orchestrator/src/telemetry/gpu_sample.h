// One telemetry sample of a GPU, and the names of its fields as they appear in the result
// document. A plain fixed-size struct, so taking a sample allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace orch {

/// The sampled quantities, in document order. Values are stored already converted to the
/// document's units (W, bytes/s), so consumers never see NVML's mW and KB/s.
enum class GpuField : int {
  kGpuUtilPct,  ///< percent of the last period a kernel ran
  kMemUtilPct,  ///< percent of the last period device memory was read or written
  kPowerW,      ///< board power draw
  kSmClockMhz,
  kMemClockMhz,
  kTemperatureC,     ///< GPU die
  kMemoryUsedBytes,  ///< device memory in use (all processes, plus the driver's reserve)
  kPcieRxBytesPerS,  ///< host -> GPU
  kPcieTxBytesPerS,  ///< GPU -> host
  kThrottleReasons,  ///< NVML clocks-event-reasons bitmask (0 = clocks not held back)
};
inline constexpr int kGpuFieldCount = 10;

/// The document's name of a field: "gpu_util_pct", "power_w", ...
constexpr std::string_view field_name(GpuField f) {
  constexpr std::string_view kNames[kGpuFieldCount] = {
      "gpu_util_pct",        "mem_util_pct",    "power_w",           "sm_clock_mhz",
      "mem_clock_mhz",       "temperature_c",   "memory_used_bytes", "pcie_rx_bytes_per_s",
      "pcie_tx_bytes_per_s", "throttle_reasons"};
  return kNames[static_cast<int>(f)];
}

/// Only power is fractional; every other field is a whole number in the document.
constexpr bool field_is_integral(GpuField f) { return f != GpuField::kPowerW; }

struct GpuSample {
  double t_s = 0;  ///< seconds since the sampler started
  /// Values by GpuField; meaningful only where the bit (1 << field) of `present` is set.
  /// doubles hold every field exactly (memory and the bitmask stay far below 2^53).
  std::array<double, kGpuFieldCount> value{};
  std::uint32_t present = 0;

  bool has(GpuField f) const { return (present >> static_cast<int>(f)) & 1u; }
  double get(GpuField f) const { return value[static_cast<std::size_t>(f)]; }
  void set(GpuField f, double v) {
    value[static_cast<std::size_t>(f)] = v;
    present |= 1u << static_cast<int>(f);
  }
};

}  // namespace orch
