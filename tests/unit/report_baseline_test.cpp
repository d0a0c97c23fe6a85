// `baseline: NAME` in the experiment file: the planner takes a configuration's name and refuses
// any other, the sweep's plan revision keeps its hash, and rank's speed-up and the report's
// before/after are against it; without it, against the slowest, and the footnote says which.
#include <catch2/catch.hpp>

#include "plan/planner.h"
#include "report/html_report.h"
#include "report/metric_catalog.h"
#include "report/rank_table.h"
#include "report/ranking.h"
#include "report/shown_runs.h"
#include "storage/store.h"
#include "storage/sweep_plans.h"
#include "sweep/plan_revision.h"
#include "unit/plan_test_catalog.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

using Catch::Matchers::Contains;

const char* kMatrix = "name: n\nmatrix:\n  memory_format: [contiguous, channels_last]\n";

TEST_CASE("baseline: names a configuration of the plan, or is refused", "[plan][baseline]") {
  const Plan without = test::plan_text(kMatrix);
  CHECK(without.baseline.empty());
  REQUIRE(without.runs.size() == 2);
  const std::string second = without.runs[1].name;

  const Plan with = test::plan_text(std::string(kMatrix) + "baseline: " + second + "\n");
  CHECK(with.baseline == second);
  // The runs are the same: the baseline changes what is compared, not what runs.
  REQUIRE(with.runs.size() == 2);
  CHECK(with.runs[0].hash == without.runs[0].hash);
  const storage::SweepPlan revision = sweep::sweep_plan_of(with);
  CHECK(revision.baseline == with.runs[1].hash);
  CHECK(sweep::sweep_plan_of(without).baseline.empty());

  const PlanError typo = test::plan_failure(std::string(kMatrix) + "baseline: " + second + "x\n");
  CHECK(typo.key_path == "baseline");
  CHECK(typo.line == 4);
  CHECK_THAT(typo.message, Contains("'" + second + "x'"));
  CHECK_THAT(typo.allowed, Contains(second));
  const PlanError list = test::plan_failure(std::string(kMatrix) + "baseline: [a, b]\n");
  CHECK(list.key_path == "baseline");
  CHECK_THAT(list.message, Contains("expected a configuration's name"));
}

TEST_CASE("baseline: kept with the plan revision, and a change of it is a difference",
          "[store][baseline]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  storage::SweepPlan plan;
  plan.configs = {{"h1", "fp32", 1, {}}, {"h2", "amp", 1, {}}};
  plan.baseline = "h1";
  storage::record_plan(store.database(), id, plan);
  const auto stored = storage::latest_plan(store.database(), id);
  REQUIRE(stored);
  CHECK(stored->baseline == "h1");
  CHECK(storage::plan_differences(*stored, plan).empty());
  storage::SweepPlan moved = plan;
  moved.baseline = "h2";
  CHECK(storage::plan_differences(*stored, moved) ==
        std::vector<std::string>{"baseline: fp32 -> amp"});
  moved.baseline.clear();
  CHECK(storage::plan_differences(*stored, moved) ==
        std::vector<std::string>{"baseline: fp32 -> none (the slowest)"});
}

TEST_CASE("baseline: rank's speed-up and the report's before are against it",
          "[report][baseline]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  store.record(id, test::result_doc("slow", "aaaa0001", 0, "ok", 500));
  store.record(id, test::result_doc("base", "bbbb0002", 0, "ok", 1000));
  store.record(id, test::result_doc("fast", "cccc0003", 0, "ok", 2000));
  const auto sweep = *store.sweep(id);

  // Without a baseline: against the slowest, said so.
  const Ranking plain = rank_runs(store.runs(id), require_metric("images_per_s"));
  CHECK(plain.baseline.empty());
  CHECK(plain.rows[0].speedup == Approx(4.0));
  const std::string plain_table = format_rank_table(plain, sweep);
  CHECK_THAT(plain_table, Contains("speedup: against the slowest configuration (`baseline: NAME`"));
  CHECK_THAT(html_report(store, sweep), Contains("the sweep's <b>slowest</b> configuration"));

  storage::SweepPlan plan;
  plan.configs = {
      {"aaaa0001", "slow", 1, {}}, {"bbbb0002", "base", 1, {}}, {"cccc0003", "fast", 1, {}}};
  plan.baseline = "bbbb0002";
  storage::record_plan(store.database(), id, plan);
  const ShownRuns shown = shown_runs(store, sweep);
  CHECK(shown.baseline == "bbbb0002");
  const Ranking r =
      rank_runs(shown.runs, require_metric("images_per_s"), 0, Diverged::leave_out, shown.baseline);
  CHECK(r.baseline == "base");
  REQUIRE(r.rows.size() == 3);
  CHECK(r.rows[0].speedup == Approx(2.0));
  CHECK(r.rows[1].baseline);
  CHECK(r.rows[1].speedup == Approx(1.0));
  CHECK(r.rows[2].speedup == Approx(0.5));  // slower than the baseline: below 1x
  const std::string table = format_rank_table(r, sweep);
  INFO(table);
  CHECK_THAT(table, Contains("1.00x (baseline)"));
  CHECK_THAT(table, Contains("speedup: against the baseline, base (`baseline:` in the experiment "
                             "file)"));
  const std::string html = html_report(store, sweep);
  CHECK_THAT(html, Contains("the experiment file's <code>baseline:</code>, <b>base</b>"));
  CHECK_THAT(html, Contains("before: base (1 run)") && Contains("after: fast (1 run)"));
}

}  // namespace
}  // namespace orch
