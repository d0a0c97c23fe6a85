// The ranking view's noise columns (schema 10): images_per_s_ci95_share and noisy agree with
// what `orch rank` marks NOISY for the same runs, a single run is never noisy, and a version 9
// database (the frozen v9 schema) is migrated to them with its runs kept.
#include <catch2/catch.hpp>

#include "report/ranking.h"
#include "storage/store.h"
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

}  // namespace

TEST_CASE("the ranking view marks noisy configurations as rank does", "[store][ranking]") {
  TempDb db;
  Store store(db.path);
  const auto id = store.open_sweep("night", "exp", "");
  int repeat = 0;
  for (double ips : {1000.0, 1002.0, 998.0})
    store.record(id, orch::test::result_doc("steady", "aaaa0001", repeat++, "ok", ips));
  repeat = 0;
  for (double ips : {1100.0, 1500.0, 800.0})
    store.record(id, orch::test::result_doc("jumpy", "bbbb0002", repeat++, "ok", ips));
  store.record(id, orch::test::result_doc("single", "cccc0003", 0, "ok", 900));

  const auto view = [&](const std::string& col, const std::string& name) {
    return text(store, "SELECT " + col + " FROM ranking WHERE name = '" + name + "'");
  };
  CHECK(view("noisy", "steady") == "0");
  CHECK(view("noisy", "jumpy") == "1");
  CHECK(view("noisy", "single") == "0");
  CHECK(view("images_per_s_ci95_share", "single") == "NULL");
  // steady: sd 2, t(2) 4.303, sqrt(3): half-width 4.97 on a mean of 1000.
  CHECK(std::stod(view("images_per_s_ci95_share", "steady")) == Approx(0.004969).epsilon(1e-3));

  // The same verdicts as rank's, configuration by configuration.
  const auto ranking = orch::rank_runs(store.runs(id), orch::require_metric("images_per_s"));
  REQUIRE(ranking.rows.size() == 3);
  for (const auto& c : ranking.rows) {
    INFO(c.name);
    CHECK(view("noisy", c.name) == (c.noisy ? "1" : "0"));
  }
}

TEST_CASE("a version 9 database is migrated to version 10", "[store][migration][ranking]") {
  TempDb db;
  {
    Database v9(db.path);
    v9.exec("PRAGMA journal_mode=WAL");
    v9.exec(read_text(std::string(ORCH_SOURCE_DIR) + "/storage/migrations/schema_v9.sql"));
    v9.exec("PRAGMA user_version=9");
    v9.exec(R"(INSERT INTO sweeps (id, name, experiment, created_at, updated_at)
               VALUES (1, 'night', 'exp', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z'))");
    v9.exec(R"(INSERT INTO runs (id, sweep_id, experiment, name, config_hash, repeat, status,
               attempts, images_per_s, config_json) VALUES
               (1, 1, 'exp', 'fp32', 'h1', 0, 'ok', 1, 1000, '{}'),
               (2, 1, 'exp', 'fp32', 'h1', 1, 'ok', 1, 1400, '{}'))");
    CHECK_THROWS(v9.exec("SELECT noisy FROM ranking"));
  }
  Store store(db.path);
  CHECK(store.schema_version() == kSchemaVersion);
  CHECK(text(store, "SELECT images_per_s FROM ranking") == "1200.0");
  CHECK(text(store, "SELECT noisy FROM ranking") == "1");
  TempDb fresh;
  Store created(fresh.path);
  CHECK(schema_of(store.database()) == schema_of(created.database()));
}
