// The NVML sampler against the fake NVML: samples arrive at about the interval with NVML's
// units converted, unsupported fields are null with a reason while the others keep coming,
// no driver means "unavailable" (never a failure), and a lost GPU stops sampling.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "telemetry/nvml_sampler.h"
#include "unit/telemetry_fake_nvml.h"

namespace orch {
namespace {

using namespace std::chrono_literals;
using test::FakeNvml;
using test::kFakeBusId;

SamplerOptions options(int interval_ms, std::string bus_id = kFakeBusId) {
  SamplerOptions o;
  o.interval_ms = interval_ms;
  o.pci_bus_id = std::move(bus_id);
  return o;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("sampler: samples at about the interval, in the document's units", "[telemetry]") {
  FakeNvml fake("ok");
  NvmlSampler sampler(options(20));
  REQUIRE(sampler.available());
  // The test's own clock around each call: on a loaded 2-core machine a sleep may end late,
  // so the window is checked against when the marks were made, not against the sleeps.
  const auto t0 = std::chrono::steady_clock::now();
  const auto since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  sampler.start();
  const double started = since_start();
  std::this_thread::sleep_for(60ms);
  const double begin_before = since_start();
  sampler.mark_measure_begin();
  const double begin_after = since_start();
  std::this_thread::sleep_for(200ms);
  const double end_before = since_start();
  sampler.mark_measure_end();
  const double end_after = since_start();
  std::this_thread::sleep_for(40ms);
  const double stop_before = since_start();
  const TelemetryRecord r = sampler.stop();

  CHECK(r.available);
  CHECK(r.reason.empty());
  CHECK(r.interval_ms == 20);
  CHECK_FALSE(r.gpu_lost);
  CHECK(r.missing.empty());
  // ~300 ms at 20 ms: ~15 ticks. A loaded machine may skip some, never add any: at most one
  // per interval of the time the sampler really ran, plus the first.
  CHECK(r.samples.size() >= 5);
  CHECK(static_cast<double>(r.samples.size()) <= stop_before / 0.020 + 2);
  REQUIRE(r.measure_window_s);
  // The sampler's clock starts inside start(), between t0 and `started`.
  CHECK(r.measure_window_s->first >= begin_before - started - 0.002);
  CHECK(r.measure_window_s->first <= begin_after + 0.002);
  CHECK(r.measure_window_s->second >= end_before - started - 0.002);
  CHECK(r.measure_window_s->second <= end_after + 0.002);
  CHECK(r.measure_window_s->second - r.measure_window_s->first >= 0.195);
  for (std::size_t i = 1; i < r.samples.size(); ++i) {
    CHECK(r.samples[i].t_s > r.samples[i - 1].t_s);
  }
  // Ticks sit on a 20 ms grid from t = 0: late wake-ups and skipped ticks can only stretch
  // the mean gap, never shrink it below the interval.
  const double mean_gap =
      (r.samples.back().t_s - r.samples.front().t_s) / static_cast<double>(r.samples.size() - 1);
  CHECK(mean_gap >= 0.018);
  CHECK(mean_gap <= 0.1);
}

TEST_CASE("sampler: an unsupported query is null with its reason; the rest keep coming",
          "[telemetry]") {
  FakeNvml fake("not_supported_pcie");
  NvmlSampler sampler(options(10));
  REQUIRE(sampler.available());
  sampler.start();
  sampler.mark_measure_begin();
  std::this_thread::sleep_for(120ms);
  sampler.mark_measure_end();
  const TelemetryRecord r = sampler.stop();
  REQUIRE(r.samples.size() >= 3);
  for (const GpuSample& s : r.samples) {
    CHECK_FALSE(s.has(GpuField::kPcieRxBytesPerS));
    CHECK_FALSE(s.has(GpuField::kPcieTxBytesPerS));
    CHECK(s.has(GpuField::kGpuUtilPct));
    CHECK(s.has(GpuField::kPowerW));
    CHECK(s.has(GpuField::kThrottleReasons));
  }
  REQUIRE(r.missing.size() == 2);
  CHECK(contains(r.missing.at("pcie_rx_bytes_per_s"), "NVML_ERROR_NOT_SUPPORTED"));
  CHECK(contains(r.missing.at("pcie_tx_bytes_per_s"), "NVML_ERROR_NOT_SUPPORTED"));

  const auto doc = telemetry_json(r);
  CHECK(doc["samples"][0]["pcie_rx_bytes_per_s"].is_null());
  CHECK(doc["samples"][0]["power_w"].is_number());
  CHECK(doc["missing"].size() == 2);
  const auto m = telemetry_metrics(r);
  CHECK_FALSE(m.contains("pcie_rx_mean_bytes_per_s"));  // never available: left out
  CHECK_FALSE(m.contains("pcie_tx_mean_bytes_per_s"));
  CHECK(m.contains("power_mean_w"));
}

TEST_CASE("sampler: no NVML library means unavailable with the reason, never a failure",
          "[telemetry]") {
  test::ScopedEnv lib(kNvmlLibraryVariable, "/nonexistent/libnvidia-ml.so.1");
  NvmlSampler sampler(options(10));
  CHECK_FALSE(sampler.available());
  CHECK(contains(sampler.unavailable_reason(), "/nonexistent/libnvidia-ml.so.1"));
  sampler.start();  // does nothing
  sampler.mark_measure_begin();
  sampler.mark_measure_end();
  const TelemetryRecord r = sampler.stop();
  CHECK_FALSE(r.available);
  CHECK(contains(r.reason, "could not be loaded"));
  CHECK(r.samples.empty());
  const auto doc = telemetry_json(r);
  CHECK(doc["available"] == false);
  CHECK(doc["reason"].is_string());
  CHECK(doc["samples"].empty());
  CHECK(telemetry_metrics(r).empty());
}

TEST_CASE("sampler: NVML that cannot initialise, or has no such GPU, is unavailable",
          "[telemetry]") {
  SECTION("nvmlInit fails") {
    FakeNvml fake("init_fails");
    NvmlSampler sampler(options(10));
    CHECK_FALSE(sampler.available());
    CHECK(contains(sampler.unavailable_reason(), "NVML_ERROR_DRIVER_NOT_LOADED"));
  }
  SECTION("no devices") {
    FakeNvml fake("no_devices");
    NvmlSampler sampler(options(10));
    CHECK_FALSE(sampler.available());
    CHECK(contains(sampler.unavailable_reason(), kFakeBusId));
    CHECK(contains(sampler.unavailable_reason(), "NVML_ERROR_NOT_FOUND"));
  }
  SECTION("another bus id") {
    FakeNvml fake("ok");
    NvmlSampler sampler(options(10, "0000:af:00.0"));
    CHECK_FALSE(sampler.available());
    CHECK(contains(sampler.unavailable_reason(), "0000:af:00.0"));
  }
}

TEST_CASE("sampler: a lost GPU stops sampling and is flagged", "[telemetry]") {
  FakeNvml fake("gpu_lost_after_3");
  NvmlSampler sampler(options(5));
  REQUIRE(sampler.available());
  sampler.start();
  for (int i = 0; i < 400 && !sampler.gpu_lost(); ++i) std::this_thread::sleep_for(5ms);
  REQUIRE(sampler.gpu_lost());
  std::this_thread::sleep_for(50ms);  // a sampler still running would add samples here
  const TelemetryRecord r = sampler.stop();
  CHECK(r.gpu_lost);
  CHECK(contains(r.gpu_lost_reason, "NVML_ERROR_GPU_IS_LOST"));
  CHECK(r.samples.size() == 3);  // the three queries before the loss
  CHECK(r.available);
  const auto doc = telemetry_json(r);
  CHECK(doc["gpu_lost"] == true);
  CHECK(contains(doc["gpu_lost_reason"].get<std::string>(), "GPU_IS_LOST"));
}

TEST_CASE("sampler: stopping without a measure window leaves it null", "[telemetry]") {
  FakeNvml fake("ok");
  NvmlSampler sampler(options(10));
  sampler.start();
  std::this_thread::sleep_for(30ms);
  const TelemetryRecord r = sampler.stop();
  CHECK_FALSE(r.measure_window_s);
  CHECK(telemetry_json(r)["measure_window_s"].is_null());
  CHECK(telemetry_metrics(r).empty());
}

}  // namespace
}  // namespace orch
