// The run diagnosis on constructed documents: each label, its numbers, and the order of the
// rules.
#include <catch2/catch.hpp>

#include "analysis/diagnosis.h"

using namespace orch::analysis;
using Catch::Matchers::Contains;

namespace {

nlohmann::json doc_with(double step_ms, double wait_ms) {
  return {{"status", "ok"},
          {"device", "cuda:0"},
          {"metrics", {{"step_ms_mean", step_ms}, {"data_wait_ms_mean", wait_ms}}},
          {"environment", {{"pcie", {{"gen_current", 4}, {"width_current", 16}}}}}};
}

// A CUDA run's document: the runner's measure of the GPU's idle time at the batch hand-offs
// (`gpu_idle_ms_mean`, runner/step_timer.h) beside the host's data wait.
nlohmann::json gpu_doc_with(double step_ms, double wait_ms, double idle_ms, double util_pct) {
  auto doc = doc_with(step_ms, wait_ms);
  doc["metrics"]["gpu_idle_ms_mean"] = idle_ms;
  doc["metrics"]["gpu_idle_share"] = idle_ms / step_ms;
  doc["metrics"]["gpu_util_mean_pct"] = util_pct;
  return doc;
}

}  // namespace

TEST_CASE("data wait above 10% of the step is input-bound, with or without telemetry",
          "[diagnosis]") {
  auto doc = doc_with(100, 25);
  auto d = diagnose(doc);
  REQUIRE(d);
  CHECK(d->label == "input-bound");
  CHECK_THAT(d->detail, Contains("data wait 25.00 ms = 25.0% of the 100.00 ms step"));
  doc["metrics"]["gpu_util_mean_pct"] = 99.0;  // even a busy GPU: the loader is the limit
  CHECK(diagnose(doc)->label == "input-bound");
  CHECK(diagnose(doc_with(100, 10))->label != "input-bound");  // exactly 10%: not above
}

TEST_CASE("GPU idle above 10% of the step is input-bound, with the host's split beside it",
          "[diagnosis][gpu_idle]") {
  const auto d = diagnose(gpu_doc_with(33.8, 22.9, 13.9, 70));
  REQUIRE(d);
  CHECK(d->label == "input-bound");
  CHECK_THAT(d->detail, Contains("GPU idle 13.90 ms = 41.1% of the 33.80 ms step waiting for input "
                                 "(host data wait 22.90 ms / compute 10.90 ms) (over 10%)"));
  // Exactly 10% is not above it.
  CHECK(diagnose(gpu_doc_with(20, 2, 2, 98))->label == "compute-bound");
}

TEST_CASE("a host that waits while the GPU works through queued steps is not input-bound",
          "[diagnosis][gpu_idle]") {
  // A CUDA graph replayed asynchronously, fed by a loader slower than the host but faster than
  // the GPU: the host waits two thirds of the step, the GPU hardly at all.
  auto doc = gpu_doc_with(33.8, 22.9, 0.05, 98);
  auto d = diagnose(doc);
  REQUIRE(d);
  CHECK(d->label == "compute-bound");
  CHECK_THAT(d->detail, Contains("GPU busy 98% (NVML mean)"));
  CHECK_THAT(d->detail, Contains("GPU idle 0.05 ms = 0.1% of the 33.80 ms step"));
  CHECK_THAT(d->detail, Contains("host data wait 22.90 ms / compute 10.90 ms: the host waited for "
                                 "the loader while the GPU worked through queued steps"));
  // The same document without the GPU's figure (an older one) falls back to the host's split.
  doc["metrics"].erase("gpu_idle_ms_mean");
  doc["metrics"].erase("gpu_idle_share");
  d = diagnose(doc);
  CHECK(d->label == "input-bound");
  CHECK_THAT(d->detail, Contains("data wait 22.90 ms = 67.8% of the 33.80 ms step"));
}

TEST_CASE("a GPU waiting for a batch the host already holds is input-bound",
          "[diagnosis][gpu_idle]") {
  // A loader that hands over a batch still being decoded on its own stream: the host returns
  // at once, the compute stream waits for the decode.
  const auto d = diagnose(gpu_doc_with(20, 0.04, 6, 75));
  REQUIRE(d);
  CHECK(d->label == "input-bound");
  CHECK_THAT(d->detail, Contains("GPU idle 6.00 ms = 30.0% of the 20.00 ms step"));
  CHECK_THAT(d->detail, !Contains("worked through queued steps"));
}

TEST_CASE("with the GPU's idle time, launch- and compute-bound say the GPU did not wait",
          "[diagnosis][gpu_idle]") {
  auto d = diagnose(gpu_doc_with(20, 0.1, 0.2, 55));
  REQUIRE(d);
  CHECK(d->label == "launch-bound");
  CHECK_THAT(d->detail, Contains("(GPU busy under 80% with the GPU not waiting for input)"));
  CHECK_THAT(d->detail, !Contains("no data wait"));
  // Without NVML the idle figure still decides input-bound and stands in the detail.
  auto doc = gpu_doc_with(20, 0.1, 0.2, 0);
  doc["metrics"].erase("gpu_util_mean_pct");
  d = diagnose(doc);
  CHECK(d->label == "unknown (no telemetry)");
  CHECK_THAT(d->detail, Contains("GPU idle 0.20 ms = 1.0% of the 20.00 ms step"));
  doc["metrics"]["gpu_idle_ms_mean"] = 8.0;
  CHECK(diagnose(doc)->label == "input-bound");
}

TEST_CASE("low GPU utilization without data wait is launch-bound", "[diagnosis]") {
  auto doc = doc_with(20, 0.1);
  doc["metrics"]["gpu_util_mean_pct"] = 55.0;
  const auto d = diagnose(doc);
  REQUIRE(d);
  CHECK(d->label == "launch-bound");
  CHECK_THAT(d->detail, Contains("GPU busy 55%"));
  CHECK_THAT(d->detail, Contains("0.5% of the 20.00 ms step"));
}

TEST_CASE("a busy GPU without data wait is compute-bound", "[diagnosis]") {
  auto doc = doc_with(20, 0.1);
  doc["metrics"]["gpu_util_mean_pct"] = 98.0;
  const auto d = diagnose(doc);
  REQUIRE(d);
  CHECK(d->label == "compute-bound");
  CHECK_THAT(d->detail, Contains("GPU busy 98%"));
}

TEST_CASE("utilization falls back to the telemetry samples of the measured window", "[diagnosis]") {
  auto doc = doc_with(20, 0.1);
  doc["telemetry"] = {{"available", true},
                      {"measure_window_s", {10.0, 20.0}},
                      {"samples",
                       {{{"t_s", 5.0}, {"gpu_util_pct", 0}},  // warm-up: outside the window
                        {{"t_s", 12.0}, {"gpu_util_pct", 60}},
                        {{"t_s", 15.0}, {"gpu_util_pct", nullptr}},
                        {{"t_s", 18.0}, {"gpu_util_pct", 70}}}}};
  CHECK(telemetry_window_mean(doc, "gpu_util_pct") == Approx(65.0));
  const auto d = diagnose(doc);
  REQUIRE(d);
  CHECK(d->label == "launch-bound");
  CHECK_THAT(d->detail, Contains("GPU busy 65%"));
}

TEST_CASE("PCIe RX near the link's bandwidth is pcie-bound", "[diagnosis]") {
  // Gen4 x16: 16 * 1969.2 MB/s = 31.5 GB/s; 25 GB/s is 79%.
  auto doc = doc_with(20, 0.1);
  doc["metrics"]["gpu_util_mean_pct"] = 60.0;
  doc["metrics"]["pcie_rx_mean_bytes_per_s"] = 25e9;
  auto d = diagnose(doc);
  REQUIRE(d);
  CHECK(d->label == "pcie-bound");
  CHECK_THAT(d->detail, Contains("PCIe RX 25.0 GB/s = 79% of Gen4 x16 (31.5 GB/s)"));
  doc["metrics"]["pcie_rx_mean_bytes_per_s"] = 5e9;  // 16%: not the limit
  d = diagnose(doc);
  CHECK(d->label == "launch-bound");
  CHECK_THAT(d->detail, Contains("16% of Gen4 x16"));
  CHECK(pcie_link_bytes_per_s(3, 8) == Approx(8 * 984.6e6));
  CHECK_FALSE(pcie_link_bytes_per_s(9, 16));
}

TEST_CASE("without utilization the diagnosis is unknown, with the reason", "[diagnosis]") {
  auto doc = doc_with(20, 0.1);
  auto d = diagnose(doc);
  REQUIRE(d);
  CHECK(d->label == "unknown (no telemetry)");
  doc["telemetry"] = {{"available", false},
                      {"reason", "NVML library not found"},
                      {"samples", nlohmann::json::array()}};
  CHECK_THAT(diagnose(doc)->detail, Contains("NVML library not found"));
  doc.erase("telemetry");
  doc["device"] = "cpu";
  CHECK_THAT(diagnose(doc)->detail, Contains("CPU run"));
}

TEST_CASE("runs that did not succeed have no diagnosis", "[diagnosis]") {
  auto doc = doc_with(20, 5);
  doc["status"] = "oom";
  CHECK_FALSE(diagnose(doc));
  CHECK_FALSE(diagnose(nlohmann::json{{"status", "ok"}}));  // no step time
  CHECK_FALSE(diagnose(nlohmann::json::array()));
}

namespace {

// The document's `profile` of a run profiled on a GPU (runner/profiler.cpp): a 20 ms step that
// took 35 ms with the profiler on.
nlohmann::json gpu_profile(double busy_share, double kernels, double kernel_ms) {
  return {{"steps", 5},
          {"activities", {"cpu", "cuda"}},
          {"step_ms", 35.0},
          {"measured_step_ms", 20.0},
          {"kernels_per_step", kernels},
          {"gpu_kernel_ms_per_step", kernel_ms},
          {"gpu_busy_share", busy_share},
          {"gpu_busy_share_profiled", busy_share * 20 / 35}};
}

}  // namespace

TEST_CASE("a GPU profile decides launch- or compute-bound when NVML recorded nothing",
          "[diagnosis][profile]") {
  auto doc = doc_with(20, 0.1);
  doc["telemetry"] = {{"available", false}, {"reason", "telemetry disabled by the experiment"}};
  CHECK(diagnose(doc)->label == "unknown (no telemetry)");
  doc["profile"] = gpu_profile(0.35, 1600, 6.4);
  auto d = diagnose(doc);
  REQUIRE(d);
  CHECK(d->label == "launch-bound");
  CHECK_THAT(d->detail, Contains("trace: 1600 kernels/step, mean kernel 4 us, GPU busy 35% of the "
                                 "20.00 ms step (20% of the 35.00 ms profiled step)"));
  CHECK_THAT(d->detail, Contains("no NVML utilization"));
  // A document without the measured step time: the share is the profiled steps'.
  doc["profile"].erase("measured_step_ms");
  CHECK_THAT(diagnose(doc)->detail, Contains("GPU busy 35% of the 35.00 ms profiled step"));
  doc["profile"] = gpu_profile(0.92, 300, 18.0);
  d = diagnose(doc);
  CHECK(d->label == "compute-bound");
  CHECK_THAT(d->detail, Contains("GPU busy 92%"));
}

TEST_CASE("with NVML, a GPU profile adds its evidence without changing the decision",
          "[diagnosis][profile]") {
  auto doc = doc_with(20, 0.1);
  doc["metrics"]["gpu_util_mean_pct"] = 55.0;
  doc["profile"] = gpu_profile(0.5, 900, 9.0);
  auto d = diagnose(doc);
  CHECK(d->label == "launch-bound");
  CHECK_THAT(d->detail, Contains("GPU busy 55% (NVML mean)"));
  CHECK_THAT(d->detail, Contains("trace: 900 kernels/step, mean kernel 10 us, GPU busy 50%"));
  // NVML says busy, the trace finds gaps: still compute-bound, with a pointer to the trace.
  doc["metrics"]["gpu_util_mean_pct"] = 97.0;
  d = diagnose(doc);
  CHECK(d->label == "compute-bound");
  CHECK_THAT(d->detail, Contains("the trace finds the GPU busy under 80%"));
  doc["profile"] = gpu_profile(0.95, 300, 19.0);
  d = diagnose(doc);
  CHECK(d->label == "compute-bound");
  CHECK_THAT(d->detail, !Contains("under 80%"));
}

TEST_CASE("a CPU profile says nothing about the GPU", "[diagnosis][profile]") {
  auto doc = doc_with(200, 1);
  doc["device"] = "cpu";
  doc["profile"] = {{"steps", 2},
                    {"activities", {"cpu"}},
                    {"step_ms", 200.0},
                    {"kernels_per_step", 0.0},
                    {"gpu_busy_share", nullptr}};
  const auto d = diagnose(doc);
  CHECK(d->label == "unknown (no telemetry)");
  CHECK_THAT(d->detail, !Contains("trace"));
}
