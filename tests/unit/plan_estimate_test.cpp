// The plan's estimate: each configuration's runs at what this database says such a run took
// (its own runs, else the same model and batch, else the median run), else a stated default;
// a warning past a night.
#include "report/plan_estimate.h"

#include <catch2/catch.hpp>

#include "storage/store.h"
#include "unit/plan_test_catalog.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

using Catch::Contains;

// Records an ok run of `run`'s configuration that took `seconds`.
void record(storage::Store& store, std::int64_t sweep, const RunSpec& run, int repeat,
            double seconds, const std::string& status = "ok") {
  auto doc = test::result_doc(run.name, run.hash, repeat, status);
  doc["config"] = run.config.json();
  doc["duration_s"] = seconds;
  store.record(sweep, doc);
}

const char* kPlan = R"(name: e
base:
  repeat: 2
matrix:
  batch_size: [32, 64]
  model.depth: [18, 50]
)";

TEST_CASE("estimate: without history, every run at the stated default", "[plan][estimate]") {
  const Plan p = test::plan_text(kPlan);
  const PlanEstimate e = estimate_plan(p, nullptr);
  CHECK(e.runs == 8);
  CHECK(e.fallback == 4);
  CHECK(e.seconds == Approx(8 * kDefaultRunSeconds));
  CHECK(format_plan_estimate(e, "r.db") ==
        "estimate: 8 runs, about 8 min (4 configurations at a guessed 60 s a run, with no "
        "successful run in r.db to go by)\n");
}

TEST_CASE("estimate: own runs first, then the same model and batch, then the median",
          "[plan][estimate]") {
  const Plan p = test::plan_text(kPlan);
  // runs, two each: b32/depth=18, b32/depth=50, b64/depth=18, b64/depth=50
  test::TempDb db;
  storage::Store store(db.path);
  const auto s = store.open_sweep("before", "e", "");
  record(store, s, p.runs[0], 0, 100);  // b32/depth=18 itself: 100 and 120
  record(store, s, p.runs[0], 1, 120);
  record(store, s, p.runs[0], 2, 999, "failed");  // a failed run teaches nothing
  const Plan other = test::plan_text(
      "name: o\nbase:\n  model: {plugin: resnet, depth: 50}\n  batch_size: 64\n  seed: 7\n");
  REQUIRE(other.runs[0].hash != p.runs[6].hash);
  record(store, s, other.runs[0], 0, 300);  // the same model and batch as b64/depth=50
  const PlanEstimate e = estimate_plan(p, &store);
  CHECK(e.own == 1);
  CHECK(e.similar == 1);
  CHECK(e.median == 2);  // b32/depth=50 and b64/depth=18: the median of 100, 120 and 300
  CHECK(e.median_s == 120);
  CHECK(e.seconds == Approx(2 * 110 + 2 * 300 + 4 * 120));
  CHECK(format_plan_estimate(e, "r.db") ==
        "estimate: 8 runs, about 22 min (1 configuration from their own runs in r.db, 1 "
        "configuration from runs of the same model and batch, 2 configurations at the "
        "database's median run (2 min))\n");
}

TEST_CASE("estimate: past a night, a warning", "[plan][estimate]") {
  PlanOptions big;
  big.max_runs = 100000;
  const Plan p = test::plan_text(
      "name: big\nbase:\n  repeat: 3\nmatrix:\n  batch_size: [8, 16, 32, 64, 128, 256, 512, 1024, "
      "2048, 4096]\n  seed: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n  optimizer.lr: [0.1, 0.01]\n"
      "  memory_format: [contiguous, channels_last]\n  cudnn_benchmark: [on, off]\n"
      "  precision: [fp32, amp, tf32]\n  model.depth: [18, 50]\n",
      big);
  const PlanEstimate e = estimate_plan(p, nullptr);
  CHECK(e.runs == 14400);
  const std::string text = format_plan_estimate(e, "r.db");
  CHECK_THAT(text, Contains("about 10.0 days"));
  CHECK_THAT(text,
             Contains("\nwarning: this plan would run for about 10.0 days, more than 12.0 h"));
  // Under the threshold, no warning.
  CHECK_THAT(format_plan_estimate(estimate_plan(test::plan_text(kPlan), nullptr), "r.db"),
             !Contains("warning"));
  CHECK(duration_text(45) == "45 s");
  CHECK(duration_text(600) == "10 min");
  CHECK(duration_text(5400) == "1.5 h");
}

}  // namespace
}  // namespace orch
