// Plan revisions of a sweep: recorded, compared, and the runs a revision owns; the migration
// of a version-3 database adds the table.
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "storage/sweep_plans.h"
#include "unit/schema_test_support.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using Catch::Matchers::Contains;
using orch::test::read_text;
using orch::test::result_doc;
using orch::test::schema_of;
using orch::test::TempDb;

namespace {

SweepPlan plan_of(std::vector<PlannedConfig> configs) {
  SweepPlan p;
  p.experiment_file = "exp.yaml";
  p.configs = std::move(configs);
  return p;
}

PlannedConfig config(const std::string& hash, const std::string& name, int repeats = 3,
                     int measure = 50) {
  return {hash, name, repeats, {{"warmup", 10}, {"measure", measure}}};
}

}  // namespace

TEST_CASE("plan revisions: recorded in order and read back", "[store][revisions]") {
  TempDb db;
  Store store(db.path);
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  CHECK_FALSE(latest_plan(store.database(), id));
  CHECK(plan_revisions(store.database(), id) == 0);
  CHECK(record_plan(store.database(), id, plan_of({config("h1", "fp32"), config("h2", "amp")})) ==
        1);
  auto second = plan_of({config("h1", "fp32", 5)});
  second.warnings = {"CUDA_LAUNCH_BLOCKING=1"};
  CHECK(record_plan(store.database(), id, second) == 2);
  const auto latest = latest_plan(store.database(), id);
  REQUIRE(latest);
  CHECK(latest->revision == 2);
  CHECK(latest->experiment_file == "exp.yaml");
  REQUIRE(latest->configs.size() == 1);
  CHECK(latest->configs[0].repeats == 5);
  CHECK(latest->configs[0].steps["measure"] == 50);
  CHECK(latest->warnings == std::vector<std::string>{"CUDA_LAUNCH_BLOCKING=1"});
  const auto first = plan_revision(store.database(), id, 1);
  REQUIRE(first);
  CHECK(first->configs.size() == 2);
  CHECK_FALSE(plan_revision(store.database(), id, 3));
  set_plan_warnings(store.database(), id, 1, {"persistence mode is off"});
  CHECK(plan_revision(store.database(), id, 1)->warnings ==
        std::vector<std::string>{"persistence mode is off"});
}

TEST_CASE("plan revisions: what differs", "[store][revisions]") {
  const auto before = plan_of({config("h1", "fp32"), config("h2", "amp"), config("h3", "tf32")});
  CHECK(plan_differences(before, before).empty());
  // Order does not matter; the set of configurations and their repeats do.
  CHECK(plan_differences(before,
                         plan_of({config("h3", "tf32"), config("h1", "fp32"), config("h2", "amp")}))
            .empty());
  CHECK(plan_differences(before, plan_of({config("h1", "fp32"), config("h4", "bf16")})) ==
        std::vector<std::string>{"1 configuration added: bf16",
                                 "2 configurations removed: amp, tf32"});
  CHECK(plan_differences(before, plan_of({config("h1", "fp32", 5), config("h2", "amp", 5),
                                          config("h3", "tf32")})) ==
        std::vector<std::string>{"repeats 3 -> 5 for 2 configurations"});
  // Steps change every hash: said once, configurations matched by name.
  const auto steps =
      plan_differences(before, plan_of({config("s1", "fp32", 3, 100), config("s2", "amp", 3, 100),
                                        config("s3", "tf32", 3, 100)}));
  REQUIRE(steps.size() == 1);
  CHECK(steps[0] == "steps: measure 50, warmup 10 -> measure 100, warmup 10");
  // Another setting under the same names.
  CHECK(plan_differences(
            before, plan_of({config("x1", "fp32"), config("h2", "amp"), config("h3", "tf32")})) ==
        std::vector<std::string>{"1 configuration changed settings under the same names: fp32"});
}

TEST_CASE("plan revisions: a revision's runs", "[store][revisions]") {
  std::vector<RunRecord> runs(5);
  runs[0].config_hash = "h1", runs[0].repeat = 0;
  runs[1].config_hash = "h1", runs[1].repeat = 4;
  runs[2].config_hash = "h2", runs[2].repeat = 0;
  runs[3].config_hash = "old", runs[3].repeat = 0;
  runs[4].config_hash = "h1", runs[4].repeat = 1;
  const auto kept = runs_of_plan(runs, plan_of({config("h1", "fp32", 2), config("h2", "amp", 1)}));
  REQUIRE(kept.size() == 3);
  CHECK(kept[0].repeat == 0);
  CHECK(kept[1].config_hash == "h2");
  CHECK(kept[2].repeat == 1);
}

TEST_CASE("a version 3 database is migrated to version 4 and on", "[store][migration][revisions]") {
  TempDb db;
  {
    Database v3(db.path);
    v3.exec("PRAGMA journal_mode=WAL");
    v3.exec(read_text(std::string(ORCH_SOURCE_DIR) + "/storage/migrations/schema_v3.sql"));
    v3.exec("PRAGMA user_version=3");
    v3.exec(R"(INSERT INTO sweeps (id, name, experiment, created_at, updated_at)
               VALUES (1, 'night', 'exp', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z'))");
    v3.exec(R"(INSERT INTO runs (id, sweep_id, experiment, name, config_hash, repeat, status,
               attempts, images_per_s, config_json) VALUES
               (1, 1, 'exp', 'fp32', 'h1', 0, 'ok', 1, 1000, '{}'))");
  }
  Store store(db.path);
  CHECK(store.schema_version() == kSchemaVersion);
  // Every run kept; the sweep has no revision until `orch sweep` records one.
  CHECK(store.runs(1).size() == 1);
  CHECK_FALSE(latest_plan(store.database(), 1));
  CHECK(record_plan(store.database(), 1, plan_of({config("h1", "fp32", 1)})) == 1);

  // The migrated file has exactly the schema of a new one.
  TempDb fresh;
  Store created(fresh.path);
  CHECK(schema_of(store.database()) == schema_of(created.database()));
}
