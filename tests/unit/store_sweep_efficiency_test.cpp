// Where sweeps spent their time: each invocation's row in sweep_invocations, the per-sweep sums
// and shares of the sweep_efficiency view, and the migration of a version 5 database (the
// frozen v5 schema text), which gains both and keeps its runs.
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "unit/schema_test_support.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using orch::test::read_text;
using orch::test::schema_of;
using orch::test::TempDb;

namespace {

double real(Store& store, const std::string& sql) {
  Statement st(store.database(), sql);
  REQUIRE(st.step());
  return st.column_double(0);
}

InvocationTime invocation(double wall_s, int slots, double measure_s) {
  InvocationTime t;
  t.started_at = "2025-01-01T00:00:00Z";
  t.finished_at = "2025-01-01T01:00:00Z";
  t.wall_s = wall_s;
  t.slots = slots;
  t.runs = 4;
  t.phases.measure_s = measure_s;
  t.phases.warmup_s = 10;
  t.phases.startup_s = 5;
  t.phases.setup_s = 4;
  t.phases.after_s = 1;
  t.phases.teardown_s = 2;
  t.phases.batch_search_s = 3;
  t.unmeasured_s = 5;
  return t;
}

}  // namespace

TEST_CASE("sweep_efficiency adds a sweep's invocations and shares their slot time",
          "[store][efficiency]") {
  TempDb db;
  Store store(db.path);
  const auto a = store.open_sweep("night", "exp", "exp.yaml");
  const auto b = store.open_sweep("other", "exp2", "exp2.yaml");
  store.record_invocation(a, invocation(100, 1, 40));  // 100 slot-seconds
  store.record_invocation(a, invocation(50, 2, 30));   // 100 more, on two GPUs
  store.record_invocation(b, invocation(10, 1, 1));
  const std::string night = " FROM sweep_efficiency WHERE sweep = 'night'";
  CHECK(real(store, "SELECT invocations" + night) == 2);
  CHECK(real(store, "SELECT runs" + night) == 8);
  CHECK(real(store, "SELECT wall_s" + night) == Approx(150));
  CHECK(real(store, "SELECT slot_s" + night) == Approx(200));
  CHECK(real(store, "SELECT measured_share" + night) == Approx(70.0 / 200));
  CHECK(real(store, "SELECT warmup_share" + night) == Approx(20.0 / 200));
  CHECK(real(store, "SELECT after_share" + night) == Approx(6.0 / 200));
  // 200 - (70 + 20 + 10 + 8 + 2 + 4 + 6 + 10) = 70 s that no run took.
  CHECK(real(store, "SELECT between_runs_share" + night) == Approx(70.0 / 200));
  CHECK(real(store, "SELECT measured_share FROM sweep_efficiency WHERE sweep = 'other'") ==
        Approx(0.1));
  // A sweep with no invocation recorded (one from an older orch) has no row.
  store.open_sweep("old", "exp3", "exp3.yaml");
  CHECK(real(store, "SELECT COUNT(*) FROM sweep_efficiency") == 2);
}

TEST_CASE("a version 5 database is migrated to version 6", "[store][migration]") {
  TempDb db;
  {
    Database v5(db.path);
    v5.exec("PRAGMA journal_mode=WAL");
    v5.exec(read_text(std::string(ORCH_SOURCE_DIR) + "/storage/migrations/schema_v5.sql"));
    v5.exec("PRAGMA user_version=5");
    v5.exec(R"(INSERT INTO sweeps (id, name, experiment, created_at, updated_at)
               VALUES (1, 'night', 'exp', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z'))");
    v5.exec(R"(INSERT INTO runs (id, sweep_id, experiment, name, config_hash, repeat, status,
               attempts, images_per_s, config_json) VALUES
               (1, 1, 'exp', 'fp32', 'h1', 0, 'ok', 1, 1000, '{}'))");
    CHECK_THROWS(v5.exec("SELECT * FROM sweep_efficiency"));
  }
  Store store(db.path);
  CHECK(store.schema_version() == orch::storage::kSchemaVersion);
  CHECK(real(store, "SELECT COUNT(*) FROM runs") == 1);
  store.record_invocation(1, invocation(100, 1, 50));
  CHECK(real(store, "SELECT measured_share FROM sweep_efficiency WHERE sweep_id = 1") ==
        Approx(0.5));
  TempDb fresh;
  Store created(fresh.path);
  CHECK(schema_of(store.database()) == schema_of(created.database()));
}
