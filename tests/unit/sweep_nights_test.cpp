// One plan per sweep and one sweep per night: the check `orch sweep` makes before it runs,
// and the {date}/{time} sweep name templates.
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "storage/sweep_plans.h"
#include "sweep/plan_revision.h"
#include "sweep/sweep_name.h"
#include "unit/plan_test_catalog.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

using Catch::Matchers::Contains;
using test::TempDb;

std::tm night(int year, int month, int day, int hour, int minute) {
  std::tm t{};
  t.tm_year = year - 1900;
  t.tm_mon = month - 1;
  t.tm_mday = day;
  t.tm_hour = hour;
  t.tm_min = minute;
  return t;
}

const char* kPlan = R"(
name: nightly
base:
  repeat: 2
matrix:
  precision: [fp32, amp]
)";

TEST_CASE("sweep names: {date} and {time} from the local time", "[sweep][nights]") {
  CHECK(sweep::expand_sweep_name("nightly-{date}", night(2026, 3, 7, 2, 5)) ==
        "nightly-2026-03-07");
  CHECK(sweep::expand_sweep_name("n-{date}-{time}", night(2026, 12, 31, 23, 59)) ==
        "n-2026-12-31-2359");
  CHECK(sweep::expand_sweep_name("plain", night(2026, 1, 1, 0, 0)) == "plain");
  CHECK_THROWS_WITH(sweep::expand_sweep_name("n-{data}", night(2026, 1, 1, 0, 0)),
                    Contains("unknown placeholder {data}") && Contains("{date}"));
  CHECK_THROWS_WITH(sweep::expand_sweep_name("n-{date", night(2026, 1, 1, 0, 0)),
                    Contains("without its '}'"));
}

TEST_CASE("plan check: the plan a sweep records", "[sweep][nights]") {
  const Plan p = test::plan_text(kPlan);
  const storage::SweepPlan sp = sweep::sweep_plan_of(p);
  REQUIRE(sp.configs.size() == 2);
  CHECK(sp.configs[0].name == "fp32");
  CHECK(sp.configs[0].hash == p.runs[0].hash);
  CHECK(sp.configs[0].repeats == 2);
  CHECK(sp.configs[0].steps == nlohmann::json{{"warmup", 10}, {"measure", 50}});
  CHECK(sp.experiment_file == "test.yaml");
}

TEST_CASE("plan check: a changed file stops the sweep unless --replan", "[sweep][nights]") {
  TempDb db;
  storage::Store store(db.path);
  const storage::SweepPlan first = sweep::sweep_plan_of(test::plan_text(kPlan));

  // A new sweep: record revision 1.
  auto check = sweep::check_plan(store, "night", first, false);
  CHECK(check.ok);
  CHECK(check.record);
  const auto id = store.open_sweep("night", "nightly", "test.yaml");
  storage::record_plan(store.database(), id, first);

  // The same plan again (resuming): nothing to record.
  check = sweep::check_plan(store, "night", first, false);
  CHECK(check.ok);
  CHECK_FALSE(check.record);

  // steps.measure changed in the file: stop, say what and the two ways on.
  PlanOptions more_steps;
  more_steps.overrides = {"steps.measure=100"};
  const storage::SweepPlan changed = sweep::sweep_plan_of(test::plan_text(kPlan, more_steps));
  check = sweep::check_plan(store, "night", changed, false);
  CHECK_FALSE(check.ok);
  CHECK_THAT(check.message, Contains("differs from the plan sweep 'night' runs (revision 1") &&
                                Contains("steps: measure 50, warmup 10 -> measure 100") &&
                                Contains("--sweep NEW-NAME") && Contains("--replan"));

  // A sweep from before revisions, holding runs of another plan: its first revision says that
  // those runs are no longer shown.
  const auto legacy = store.open_sweep("legacy", "nightly", "test.yaml");
  store.record(legacy, test::result_doc("old", "0123456789abcdef", 0));
  check = sweep::check_plan(store, "legacy", first, false);
  CHECK(check.ok);
  CHECK(check.record);
  CHECK_THAT(check.message, Contains("becomes its revision 1") && Contains("1 run of other"));

  // --replan records revision 2.
  check = sweep::check_plan(store, "night", changed, true);
  CHECK(check.ok);
  CHECK(check.record);
  CHECK_THAT(check.message, Contains("plan revision 2"));
}

TEST_CASE("plan check: a configuration changed under its name names the settings that changed",
          "[sweep][nights]") {
  const Plan before = test::plan_text(kPlan);
  PlanOptions changed;
  changed.overrides = {"steps.measure=100", "optimizer.lr=0.5", "seed=7"};
  const Plan after = test::plan_text(kPlan, changed);
  const storage::SweepPlan stored = sweep::sweep_plan_of(before);
  // Only fp32's old configuration ran: amp's old settings are not known, so it gets no line.
  std::vector<storage::RunRecord> recorded(1);
  recorded[0].config_hash = before.runs[0].hash;
  recorded[0].config = before.runs[0].config.json();
  REQUIRE(before.runs[0].name == "fp32");
  const auto lines = sweep::changed_settings(stored, after, recorded);
  REQUIRE(lines.size() == 1);
  const std::string lr_was = before.runs[0].config.json()["optimizer"]["lr"].dump();
  // The steps are left out (the message's own steps line says them); the others are named.
  CHECK(lines[0] == "fp32: optimizer.lr " + lr_was + " -> 0.5, seed " +
                        before.runs[0].config.json()["seed"].dump() + " -> 7");

  // Through check_plan: the line follows the differences.
  TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("night", "nightly", "test.yaml");
  storage::record_plan(store.database(), id, stored);
  auto doc = test::result_doc("fp32", before.runs[0].hash, 0);
  doc["config"] = before.runs[0].config.json();
  store.record(id, doc);
  const auto check = sweep::check_plan(store, "night", sweep::sweep_plan_of(after), false, &after);
  CHECK_FALSE(check.ok);
  CHECK_THAT(check.message, Contains("steps: ") && Contains("\n    " + lines[0] + "\n"));
}

}  // namespace
}  // namespace orch
