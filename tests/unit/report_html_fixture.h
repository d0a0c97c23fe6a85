// A sweep for the HTML report tests, built through the Store API: three configurations (one
// named like a script tag, two with two repeats for an interval), NVML samples with a
// saw-tooth, a failed run whose error holds markup, an experiment name with every character
// HTML escapes, and environments that should raise the doctor's warnings.
#pragma once

#include <cmath>
#include <string>

#include "storage/store.h"
#include "unit/store_test_support.h"

namespace orch::test {

inline constexpr const char* kScriptName = "<script>alert(1)</script>";
inline constexpr const char* kOddExperiment = "exp &\"'<>";
inline constexpr const char* kMarkupError = "<img src=x onerror=alert(2)> boom";
inline constexpr int kSawSamples = 40;  ///< samples of the saw-tooth run, 100 ms apart

struct ReportFixture {
  TempDb db;
  storage::Store store{db.path};
  std::int64_t sweep_id =
      store.open_sweep("night", kOddExperiment, "/tmp/exp<1>.yaml", "a <b>bold</b> description");
  std::int64_t saw_run = 0;

  ReportFixture() {
    // The script-named configuration: GPU utilization alternates 0 / 100 every sample, power
    // follows, memory climbs: the article's saw-tooth.
    for (int repeat = 0; repeat < 2; ++repeat) {
      auto d = result_doc(kScriptName, "aaaa0001", repeat, "ok", repeat == 0 ? 1000 : 1010,
                          kOddExperiment);
      d["metrics"]["gpu_util_mean_pct"] = 50.0;
      d["metrics"]["power_mean_w"] = 300.0;
      nlohmann::json samples = nlohmann::json::array();
      for (int i = 0; i < kSawSamples; ++i) {
        samples.push_back({{"t_s", 0.1 * i},
                           {"gpu_util_pct", i % 2 == 0 ? 0 : 100},
                           {"power_w", i % 2 == 0 ? 150.0 : 450.0},
                           {"memory_used_bytes", (1.0 + i / 10.0) * 1024 * 1024 * 1024}});
      }
      d["telemetry"]["samples"] = samples;
      d["telemetry"]["measure_window_s"] = {1.0, 3.0};
      d["environment"]["variables"] = {{"CUDA_LAUNCH_BLOCKING", "1"}};
      const auto id = store.record(sweep_id, d);
      if (repeat == 0) saw_run = id;
    }
    for (int repeat = 0; repeat < 2; ++repeat) {
      auto d = result_doc("amp-bf16/channels_last", "bbbb0002", repeat, "ok",
                          repeat == 0 ? 2000 : 2040, kOddExperiment);
      d["environment"]["persistence_mode"] = false;
      store.record(sweep_id, d);
    }
    auto slow = result_doc("fp32/slow", "cccc0003", 0, "ok", 500, kOddExperiment);
    slow["metrics"]["data_wait_ms_mean"] = 100.0;
    slow["config"]["precision"] = {{"plugin", "fp32"}, {"params", nlohmann::json::object()}};
    slow["config"]["memory_format"] = "contiguous";
    slow["environment"]["torch_version"] = "2.10.0";
    slow["environment"]["pcie"] = {
        {"gen_current", 3}, {"width_current", 16}, {"gen_max", 5}, {"width_max", 16}};
    store.record(sweep_id, slow);
    auto broken = result_doc("broken", "dddd0004", 0, "failed", 0, kOddExperiment);
    broken["error"] = kMarkupError;
    store.record(sweep_id, broken);
  }

  storage::SweepInfo sweep() const { return *store.sweep(sweep_id); }
};

}  // namespace orch::test
