// Summaries over the measure window, on known samples: only samples inside the window count,
// a field missing from some samples is averaged over the ones that have it, and a field never
// available in the window gives no metric at all.
#include <catch2/catch.hpp>

#include "telemetry/telemetry_record.h"

namespace orch {
namespace {

GpuSample sample(double t, double util, double power, double temp, double mem) {
  GpuSample s;
  s.t_s = t;
  s.set(GpuField::kGpuUtilPct, util);
  s.set(GpuField::kPowerW, power);
  s.set(GpuField::kTemperatureC, temp);
  s.set(GpuField::kMemoryUsedBytes, mem);
  return s;
}

TelemetryRecord known_record() {
  TelemetryRecord r;
  r.available = true;
  r.measure_window_s = std::pair{1.0, 3.0};
  r.samples = {sample(0.0, 10, 100, 40, 1e9),  // before the window: warm-up
               sample(1.0, 80, 200, 50, 5e9),  // window start (inclusive)
               sample(2.0, 90, 300, 70, 9e9),
               sample(3.0, 70, 250, 60, 7e9),          // window end (inclusive)
               sample(4.0, 5, 900, 90, 2e10)};         // after: must not count
  r.samples[2].set(GpuField::kPcieRxBytesPerS, 4096);  // only one sample has PCIe RX
  return r;
}

TEST_CASE("summary: means and maxima over the samples inside the window", "[telemetry]") {
  const auto m = telemetry_metrics(known_record());
  CHECK(m["telemetry_samples"] == 3);
  CHECK(m["gpu_util_mean_pct"].get<double>() == Approx(80.0));  // (80+90+70)/3
  CHECK(m["power_mean_w"].get<double>() == Approx(250.0));      // (200+300+250)/3
  CHECK(m["power_max_w"].get<double>() == Approx(300.0));       // not the 900 outside
  CHECK(m["temperature_max_c"] == 70);
  CHECK(m["memory_used_max_bytes"].get<std::int64_t>() == 9000000000);
  CHECK(m["pcie_rx_mean_bytes_per_s"].get<double>() == Approx(4096));  // over the one that has it
}

TEST_CASE("summary: a field never available in the window gives no metric", "[telemetry]") {
  const auto m = telemetry_metrics(known_record());
  CHECK_FALSE(m.contains("mem_util_mean_pct"));
  CHECK_FALSE(m.contains("sm_clock_mean_mhz"));
  CHECK_FALSE(m.contains("pcie_tx_mean_bytes_per_s"));
}

TEST_CASE("summary: a window with no sample in it counts zero samples", "[telemetry]") {
  TelemetryRecord r = known_record();
  r.measure_window_s = std::pair{1.2, 1.8};
  const auto m = telemetry_metrics(r);
  CHECK(m["telemetry_samples"] == 0);
  CHECK_FALSE(m.contains("power_mean_w"));
}

TEST_CASE("summary: nothing when telemetry was unavailable or the window never marked",
          "[telemetry]") {
  TelemetryRecord r = known_record();
  r.measure_window_s.reset();
  CHECK(telemetry_metrics(r).empty());
  CHECK(telemetry_metrics(TelemetryRecord::unavailable("telemetry disabled", 100)).empty());
}

TEST_CASE("summary: the unavailable record's document names the reason", "[telemetry]") {
  const auto doc = telemetry_json(TelemetryRecord::unavailable("the device is the CPU", 250));
  CHECK(doc["available"] == false);
  CHECK(doc["reason"] == "the device is the CPU");
  CHECK(doc["interval_ms"] == 250);
  CHECK(doc["samples"].empty());
  CHECK(doc["missing"].empty());
  CHECK(doc["gpu_lost"] == false);
  CHECK(doc["measure_window_s"].is_null());
}

}  // namespace
}  // namespace orch
