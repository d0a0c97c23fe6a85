// Migration of a schema-version-4 database (made with the frozen v4 schema text) to version 5:
// the runs keep every column, the new status 'diverged' and the failure_class column are
// accepted, and the file ends with exactly the schema of a new one.
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "unit/schema_test_support.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using orch::test::read_text;
using orch::test::schema_of;
using orch::test::TempDb;

namespace {

std::int64_t count(Store& store, const std::string& sql) {
  Statement st(store.database(), sql);
  REQUIRE(st.step());
  return st.column_int(0);
}

}  // namespace

TEST_CASE("a version 4 database is migrated to version 5", "[store][migration]") {
  TempDb db;
  {
    Database v4(db.path);
    v4.exec("PRAGMA journal_mode=WAL");
    v4.exec(read_text(std::string(ORCH_SOURCE_DIR) + "/storage/migrations/schema_v4.sql"));
    v4.exec("PRAGMA user_version=4");
    v4.exec(R"(INSERT INTO sweeps (id, name, experiment, created_at, updated_at)
               VALUES (1, 'night', 'exp', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z'))");
    v4.exec(R"(INSERT INTO runs (id, sweep_id, experiment, name, config_hash, repeat, status,
               attempts, images_per_s, config_json) VALUES
               (1, 1, 'exp', 'fp32', 'h1', 0, 'ok', 1, 1000, '{}'),
               (2, 1, 'exp', 'fp16', 'h2', 0, 'failed', 1, NULL, '{}'))");
    v4.exec("INSERT INTO run_metrics (run_id, name, value) VALUES (1, 'loss_last', 6.5)");
    // v4 refuses the new status: the migration is what makes it possible.
    CHECK_THROWS(v4.exec(R"(UPDATE runs SET status = 'diverged' WHERE id = 2)"));
  }
  Store store(db.path);
  CHECK(store.schema_version() == orch::storage::kSchemaVersion);
  // Every run and its metrics kept (the runs table was not rebuilt, so nothing cascaded).
  CHECK(count(store, "SELECT COUNT(*) FROM runs") == 2);
  CHECK(count(store, "SELECT COUNT(*) FROM run_metrics WHERE run_id = 1") == 1);
  CHECK(count(store, "SELECT images_per_s FROM runs WHERE id = 1") == 1000);

  store.database().exec(
      "UPDATE runs SET status = 'diverged', failure_class = 'configuration' "
      "WHERE id = 2");
  CHECK(count(store, "SELECT diverged FROM sweep_status WHERE sweep_id = 1") == 1);
  CHECK(count(store, "SELECT COUNT(*) FROM failures WHERE failure_class = 'configuration'") == 1);
  // The constraints still hold after the definition was replaced.
  CHECK_THROWS(store.database().exec("UPDATE runs SET status = 'exploded' WHERE id = 1"));
  CHECK_THROWS(store.database().exec("UPDATE runs SET failure_class = 'moon' WHERE id = 1"));
  Statement integrity(store.database(), "PRAGMA integrity_check");
  REQUIRE(integrity.step());
  CHECK(integrity.column_text(0) == "ok");

  // The migrated file has exactly the schema of a new one.
  TempDb fresh;
  Store created(fresh.path);
  CHECK(schema_of(store.database()) == schema_of(created.database()));
}
