// The SQLite store: schema creation and version, WAL, the ranking view, refusal of a newer
// schema, names bound as data.
#include "storage/store.h"

#include <catch2/catch.hpp>

#include "unit/store_test_support.h"

using namespace orch::storage;
using Catch::Matchers::Contains;
using orch::test::result_doc;
using orch::test::TempDb;

namespace {

std::int64_t count(Store& store, const std::string& sql) {
  Statement st(store.database(), sql);
  REQUIRE(st.step());
  return st.column_int(0);
}

}  // namespace

TEST_CASE("a new database gets schema version 10 in WAL mode with every table and view",
          "[store]") {
  TempDb db;
  Store store(db.path);
  CHECK(store.schema_version() == kSchemaVersion);
  CHECK(kSchemaVersion == 10);
  Statement mode(store.database(), "PRAGMA journal_mode");
  REQUIRE(mode.step());
  CHECK(mode.column_text(0) == "wal");
  for (const char* name :
       {"sweeps", "runs", "run_metrics", "run_steps", "telemetry_samples", "student_t_975",
        "run_profile", "run_profile_ops", "sweep_plans", "batch_probes", "device_checks",
        "sweep_invocations", "sweep_efficiency", "ranking", "run_summary", "run_key_metrics",
        "failures", "sweep_status", "run_environment"}) {
    INFO(name);
    Statement st(store.database(), "SELECT COUNT(*) FROM sqlite_master WHERE name = ?1");
    st.bind(1, std::string(name));
    st.step();
    CHECK(st.column_int(0) == 1);
  }
  CHECK(count(store, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'host_samples'") == 1);
  CHECK(count(store, "SELECT COUNT(*) FROM student_t_975") == 1000);
  // Every view can be queried (a typo in a view only shows when it is used).
  for (const char* view : {"ranking", "run_summary", "failures", "sweep_status", "run_environment",
                           "sweep_efficiency"}) {
    INFO(view);
    CHECK_NOTHROW(Statement(store.database(), std::string("SELECT * FROM ") + view).step());
  }
}

TEST_CASE("opening the same database again keeps it as it is", "[store]") {
  TempDb db;
  {
    Store store(db.path);
    store.record(store.open_sweep("s", "exp", "exp.yaml"), result_doc("a", "h1", 0));
  }
  Store again(db.path);
  CHECK(again.schema_version() == kSchemaVersion);
  CHECK(count(again, "SELECT COUNT(*) FROM runs") == 1);
}

TEST_CASE("recorded runs are ranked per configuration by the view, failures excluded", "[store]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("exp", "exp", "exp.yaml");
  store.record(sweep, result_doc("slow", "h1", 0, "ok", 1000));
  store.record(sweep, result_doc("fast", "h2", 0, "ok", 3000));
  store.record(sweep, result_doc("fast", "h2", 1, "ok", 2000));
  store.record(sweep, result_doc("broken", "h3", 0, "failed"));
  const auto rows = store.ranking();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].name == "fast");
  CHECK(rows[0].runs == 2);
  CHECK(rows[0].images_per_s == Approx(2500));
  CHECK(rows[0].images_per_s_min == Approx(2000));
  CHECK(rows[0].images_per_s_max == Approx(3000));
  CHECK(rows[0].precision == "amp");
  CHECK(rows[0].batch_size == 256);
  CHECK(rows[1].name == "slow");
  CHECK(store.ranking("another-experiment").empty());

  CHECK(count(store, "SELECT COUNT(*) FROM run_steps") == 6);
  CHECK(count(store, "SELECT COUNT(*) FROM telemetry_samples") == 6);
  Statement failed(store.database(), "SELECT error, term_signal, stderr_tail FROM failures");
  REQUIRE(failed.step());
  CHECK(failed.column_text(0) == "boom");
  CHECK(failed.column_int(1) == 11);
  CHECK(failed.column_text(2) == "Segmentation fault");
  CHECK_FALSE(failed.step());

  Statement view(store.database(),
                 "SELECT rank, speedup, images_per_s_stddev FROM ranking ORDER BY rank");
  REQUIRE(view.step());
  CHECK(view.column_int(0) == 1);
  CHECK(view.column_double(1) == Approx(2.5));
  CHECK(view.column_double(2) == Approx(707.10678).epsilon(1e-6));  // sd of {2000, 3000}
  REQUIRE(view.step());
  CHECK(view.column_int(0) == 2);
  CHECK(view.is_null(2));  // one run: no standard deviation
}

TEST_CASE("the run_summary view has one row per run with telemetry means and diagnosis",
          "[store]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("exp", "exp", "");
  store.record(sweep, result_doc("a", "h1", 0, "ok", 2000));
  Statement st(store.database(), R"(SELECT sweep, name, status, gpu_util_mean_pct, power_mean_w,
      data_wait_ms_mean, compute_ms_mean, diagnosis, gpu_name FROM run_summary)");
  REQUIRE(st.step());
  CHECK(st.column_text(0) == "exp");
  CHECK(st.column_text(1) == "a");
  CHECK(st.column_text(2) == "ok");
  CHECK(st.column_double(3) == Approx(97));
  CHECK(st.column_double(4) == Approx(600));
  CHECK(st.column_double(5) == Approx(0.5));
  CHECK(st.column_double(6) == Approx(128.0 - 0.5));
  CHECK(st.column_text(7) == "compute-bound");
  CHECK(st.column_text(8) == "NVIDIA H200");
  CHECK_FALSE(st.step());

  Statement env(store.database(),
                "SELECT pcie_gen_current, pcie_width_max, driver_version FROM run_environment");
  REQUIRE(env.step());
  CHECK(env.column_int(0) == 5);
  CHECK(env.column_int(1) == 16);
  CHECK(env.column_text(2) == "580.65");
}

TEST_CASE("telemetry samples keep missing fields as NULL", "[store]") {
  TempDb db;
  Store store(db.path);
  const auto id = store.record(store.open_sweep("s", "exp", ""), result_doc("a", "h1", 0));
  Statement st(store.database(), R"(SELECT seq, t_s, gpu_util_pct, power_w, memory_used_bytes,
      pcie_rx_bytes_per_s, throttle_reasons, sm_clock_mhz FROM telemetry_samples WHERE run_id = ?1
      ORDER BY seq)");
  st.bind(1, id);
  REQUIRE(st.step());
  CHECK(st.column_int(0) == 0);
  CHECK(st.column_double(1) == 1.0);
  CHECK(st.column_double(2) == 96.0);
  CHECK(st.column_double(3) == 590.5);
  CHECK(st.column_int(4) == 1000);
  CHECK(st.is_null(5));  // null in the document
  CHECK(st.column_int(6) == 4);
  CHECK(st.is_null(7));  // absent from the document
  REQUIRE(st.step());
  CHECK(st.column_int(0) == 1);
  CHECK(st.is_null(4));
  CHECK_FALSE(st.step());
}

TEST_CASE("names with quotes are stored as data, not SQL", "[store]") {
  TempDb db;
  Store store(db.path);
  const std::string evil = "x'); DROP TABLE runs; --";
  store.record(store.open_sweep(evil, "exp", ""), result_doc(evil, "h1", 0, "ok", 100));
  const auto rows = store.ranking();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].name == evil);
  CHECK(store.find_sweep(evil).has_value());
}

TEST_CASE("documents that are not orch results are refused with the reason", "[store]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  auto doc = result_doc("a", "h1", 0);
  doc["format"] = "something";
  CHECK_THROWS_WITH(store.record(sweep, doc), Contains("not an orch result document"));
  doc = result_doc("a", "h1", 0);
  doc["version"] = 3;
  CHECK_THROWS_WITH(store.record(sweep, doc), Contains("version 3"));
  doc = result_doc("a", "h1", 0);
  doc["status"] = "exploded";
  CHECK_THROWS_WITH(store.record(sweep, doc), Contains("unknown status 'exploded'"));
  doc = result_doc("a", "h1", 0);
  doc["version"] = 1;  // version 1 documents are still read
  CHECK_NOTHROW(store.record(sweep, doc));
  CHECK(count(store, "SELECT COUNT(*) FROM runs") == 1);
}

TEST_CASE("a database from a newer orch is refused, and left untouched", "[store]") {
  TempDb db;
  {
    Database raw(db.path);
    raw.exec("PRAGMA user_version=99");
  }
  REQUIRE_THROWS_WITH(Store(db.path), Contains("schema version 99, newer than this orch"));
  Database raw(db.path);
  Statement st(raw, "PRAGMA user_version");
  st.step();
  CHECK(st.column_int(0) == 99);
  Statement tables(raw, "SELECT COUNT(*) FROM sqlite_master");
  tables.step();
  CHECK(tables.column_int(0) == 0);
}
