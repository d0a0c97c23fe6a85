// The store's side of successive halving: schema 8 (status `pruned`, runs.rung, the ranking of
// full measurements only), the migration from 7, and plan revisions that own their rungs' runs.
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "storage/sweep_plans.h"
#include "unit/schema_test_support.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using orch::test::read_text;
using orch::test::schema_of;
using orch::test::TempDb;

namespace {

std::string text(Store& store, const std::string& sql) {
  Statement st(store.database(), sql);
  REQUIRE(st.step());
  return st.is_null(0) ? "NULL" : st.column_text(0);
}

// A run of configuration `config` measured in `rung` (its own hash `hash`).
nlohmann::json rung_doc(const std::string& name, const std::string& hash, const std::string& config,
                        int rung, double ips) {
  auto doc = orch::test::result_doc(name, hash, 0, "ok", ips);
  doc["config"]["search"] = {{"method", "halving"}, {"rung", rung}, {"configuration", config}};
  return doc;
}

}  // namespace

TEST_CASE("store: a rung's run carries its rung, becomes pruned, and is never ranked",
          "[store][halving]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("night", "exp", "");
  store.record(sweep, rung_doc("fast", "r0-fast", "fast", 0, 2000));
  store.record(sweep, rung_doc("slow", "r0-slow", "slow", 0, 1000));
  store.record(sweep, orch::test::result_doc("fast", "fast", 0, "ok", 1900));
  auto broken = orch::test::result_doc("broken", "r0-broken", 0, "failed");
  broken["config"]["search"] = {{"method", "halving"}, {"rung", 0}, {"configuration", "broken"}};
  store.record(sweep, broken);
  store.mark_pruned(sweep, "r0-slow", 0);
  store.mark_pruned(sweep, "r0-broken", 0);  // not ok: stays failed

  CHECK(text(store, "SELECT status FROM runs WHERE config_hash = 'r0-slow'") == "pruned");
  CHECK(text(store, "SELECT rung FROM runs WHERE config_hash = 'r0-slow'") == "0");
  CHECK(text(store, "SELECT rung FROM runs WHERE config_hash = 'fast'") == "NULL");
  CHECK(text(store, "SELECT status FROM runs WHERE config_hash = 'r0-broken'") == "failed");
  // Only the full measurement of `fast` is ranked: the rung's 2000 would lift its mean.
  CHECK(text(store, "SELECT COUNT(*) FROM ranking") == "1");
  CHECK(text(store, "SELECT images_per_s FROM ranking") == "1900.0");
  CHECK(text(store, "SELECT pruned FROM sweep_status") == "1");
  CHECK(text(store, "SELECT COUNT(*) FROM failures") == "1");  // pruned is no failure
  const auto runs = store.runs(sweep);
  int with_rung = 0;
  for (const auto& r : runs) with_rung += r.rung.has_value();
  CHECK(with_rung == 3);
  // A resumed sweep reads the pruned run's throughput, for the same cut again.
  const auto states = store.run_states(sweep);
  CHECK(states.at({"r0-slow", 0}).status == "pruned");
  CHECK(states.at({"r0-slow", 0}).images_per_s == 1000.0);
}

TEST_CASE("a version 7 database is migrated to version 8", "[store][migration][halving]") {
  TempDb db;
  {
    Database v7(db.path);
    v7.exec("PRAGMA journal_mode=WAL");
    v7.exec(read_text(std::string(ORCH_SOURCE_DIR) + "/storage/migrations/schema_v7.sql"));
    v7.exec("PRAGMA user_version=7");
    v7.exec(R"(INSERT INTO sweeps (id, name, experiment, created_at, updated_at)
               VALUES (1, 'night', 'exp', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z'))");
    v7.exec(R"(INSERT INTO runs (id, sweep_id, experiment, name, config_hash, repeat, status,
               attempts, images_per_s, config_json) VALUES
               (1, 1, 'exp', 'fp32', 'h1', 0, 'ok', 1, 1000, '{}'))");
    CHECK_THROWS(v7.exec("UPDATE runs SET status = 'pruned' WHERE id = 1"));
  }
  Store store(db.path);
  CHECK(store.schema_version() == kSchemaVersion);
  CHECK(text(store, "SELECT rung FROM runs WHERE id = 1") == "NULL");
  CHECK(text(store, "SELECT images_per_s FROM ranking") == "1000.0");
  store.mark_pruned(1, "h1", 0);
  CHECK(text(store, "SELECT status FROM runs WHERE id = 1") == "pruned");
  CHECK(text(store, "SELECT pruned FROM sweep_status") == "1");
  TempDb fresh;
  Store created(fresh.path);
  CHECK(schema_of(store.database()) == schema_of(created.database()));
}

TEST_CASE("plan revision: a halving plan owns its rungs' runs and differs from the grid's",
          "[store][halving]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("night", "exp", "");
  SweepPlan grid;
  grid.configs = {PlannedConfig{"fast", "fast", 2, {{"measure", 30}}, {}}};
  SweepPlan halving = grid;
  halving.configs[0].rungs = {PlannedRung{"r0-fast", 10, 1}};
  halving.search = {{"method", "halving"}, {"eta", 3}, {"rungs", 2}, {"rung_repeat", 1}};
  record_plan(store.database(), sweep, halving);
  const auto stored = latest_plan(store.database(), sweep);
  REQUIRE(stored);
  REQUIRE(stored->configs[0].rungs.size() == 1);
  CHECK(stored->configs[0].rungs[0].hash == "r0-fast");
  CHECK(stored->configs[0].rungs[0].measure == 10);
  CHECK(stored->search == halving.search);
  CHECK(plan_differences(*stored, halving).empty());
  const auto diff = plan_differences(*stored, grid);
  REQUIRE(diff.size() == 1);
  CHECK(diff[0] == "search: halving (eta 3, 2 rungs, rung_repeat 1) -> grid");
  // A grid's plan is written as before: no search, no rungs.
  CHECK_FALSE(grid.to_json().contains("search"));
  CHECK_FALSE(grid.to_json()["configurations"][0].contains("rungs"));

  store.record(sweep, rung_doc("fast", "r0-fast", "fast", 0, 2000));
  auto second = rung_doc("fast", "r0-fast", "fast", 0, 2000);
  second["run"]["repeat"] = 1;  // the rung measures once: not the plan's
  store.record(sweep, second);
  store.record(sweep, orch::test::result_doc("fast", "fast", 1, "ok", 1900));
  store.record(sweep, orch::test::result_doc("other", "other", 0, "ok", 1900));
  const auto mine = runs_of_plan(store.runs(sweep), *stored);
  CHECK(mine.size() == 2);
}
