// The host's telemetry in the store: host_samples and the host summaries in run_key_metrics and
// run_summary (schema 9), read back through RunRecord and `orch export`, the migration from
// version 8, and the diagnosis's input-bound hint from a busy host CPU.
#include <algorithm>
#include <catch2/catch.hpp>

#include "analysis/diagnosis.h"
#include "report/export.h"
#include "storage/store.h"
#include "unit/schema_test_support.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using Catch::Matchers::Contains;
using orch::analysis::diagnose;
using orch::test::read_text;
using orch::test::schema_of;
using orch::test::TempDb;

namespace {

std::string text(Store& store, const std::string& sql) {
  Statement st(store.database(), sql);
  REQUIRE(st.step());
  return st.is_null(0) ? "NULL" : st.column_text(0);
}

// A GPU run that waited little for data, with the GPU `util_pct` busy and the host's CPU at
// `all_pct` (every core) and `core_pct` (the busiest core).
nlohmann::json host_doc(double util_pct, double all_pct, double core_pct) {
  auto doc = orch::test::result_doc("fp32", "h1", 0);
  doc["metrics"]["gpu_util_mean_pct"] = util_pct;
  doc["metrics"]["host_cpu_util_mean_pct"] = all_pct;
  doc["metrics"]["host_cpu_util_max_pct"] = all_pct + 5;
  doc["metrics"]["host_cpu_busiest_core_mean_pct"] = core_pct;
  doc["metrics"]["host_load1_mean"] = 15.5;
  doc["metrics"]["host_load1_max"] = 17.0;
  doc["metrics"]["host_mem_available_min_bytes"] = 4294967296.0;
  doc["metrics"]["host_cpu_cores"] = 16;
  doc["metrics"]["host_telemetry_samples"] = 2;
  doc["host_telemetry"] = {{"available", true},
                           {"reason", nullptr},
                           {"source", "procfs"},
                           {"interval_ms", 100},
                           {"measure_window_s", {0.05, 0.25}},
                           {"cores", 16},
                           {"mem_total_bytes", 68719476736},
                           {"samples",
                            {{{"t_s", 0.0},
                              {"cpu_util_pct", nullptr},
                              {"busiest_core_pct", nullptr},
                              {"busiest_core", nullptr},
                              {"load1", 14.0},
                              {"mem_available_bytes", 5368709120}},
                             {{"t_s", 0.1},
                              {"cpu_util_pct", all_pct},
                              {"busiest_core_pct", core_pct},
                              {"busiest_core", 3},
                              {"load1", 15.5},
                              {"mem_available_bytes", 4294967296}}}},
                           {"missing", nlohmann::json::object()}};
  return doc;
}

}  // namespace

TEST_CASE("store: the host's samples and summaries are stored with the run and read back",
          "[store][host]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("night", "exp", "");
  const auto doc = host_doc(60, 40, 99);
  const auto id = store.record(sweep, doc);
  const std::string run = " WHERE run_id = " + std::to_string(id);
  CHECK(text(store, "SELECT COUNT(*) FROM host_samples" + run) == "2");
  CHECK(text(store, "SELECT cpu_util_pct FROM host_samples" + run + " AND seq = 0") == "NULL");
  CHECK(text(store, "SELECT cpu_util_pct FROM host_samples" + run + " AND seq = 1") == "40.0");
  CHECK(text(store, "SELECT busiest_core FROM host_samples" + run + " AND seq = 1") == "3");
  CHECK(text(store, "SELECT mem_available_bytes FROM host_samples" + run + " AND seq = 1") ==
        "4294967296");
  CHECK(text(store, "SELECT host_cpu_util_mean_pct FROM run_summary" + run) == "40.0");
  CHECK(text(store, "SELECT host_cpu_busiest_core_mean_pct FROM run_summary" + run) == "99.0");
  CHECK(text(store, "SELECT host_load1_max FROM run_summary" + run) == "17.0");
  CHECK(text(store, "SELECT host_cpu_cores FROM run_key_metrics" + run) == "16.0");
  CHECK_THAT(text(store, "SELECT diagnosis_detail FROM runs WHERE id = " + std::to_string(id)),
             Contains("one host core pegged"));

  // Recording the same document again replaces its samples rather than adding to them.
  store.record(sweep, doc);
  CHECK(text(store, "SELECT COUNT(*) FROM host_samples") == "2");

  const auto back = store.run(id);
  REQUIRE(back);
  CHECK(back->metric("host_cpu_util_mean_pct") == 40.0);
  CHECK(back->metric("host_mem_available_min_bytes") == 4294967296.0);
  const auto table = orch::export_table({*back});
  const auto col = std::find(table.columns.begin(), table.columns.end(),
                             "metrics.host_cpu_busiest_core_mean_pct");
  REQUIRE(col != table.columns.end());
  CHECK(table.rows.at(0).at(static_cast<std::size_t>(col - table.columns.begin())) == 99.0);
}

TEST_CASE("a version 8 database is migrated to version 9", "[store][migration][host]") {
  TempDb db;
  {
    Database v8(db.path);
    v8.exec("PRAGMA journal_mode=WAL");
    v8.exec(read_text(std::string(ORCH_SOURCE_DIR) + "/storage/migrations/schema_v8.sql"));
    v8.exec("PRAGMA user_version=8");
    v8.exec(R"(INSERT INTO sweeps (id, name, experiment, created_at, updated_at)
               VALUES (1, 'night', 'exp', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z'))");
    v8.exec(R"(INSERT INTO runs (id, sweep_id, experiment, name, config_hash, repeat, status,
               attempts, images_per_s, config_json) VALUES
               (1, 1, 'exp', 'fp32', 'h1', 0, 'ok', 1, 1000, '{}'))");
    v8.exec("INSERT INTO run_metrics (run_id, name, value) VALUES (1, 'gpu_util_mean_pct', 97)");
    CHECK_THROWS(v8.exec("SELECT host_cpu_util_mean_pct FROM run_summary"));
    CHECK_THROWS(v8.exec("SELECT * FROM host_samples"));
  }
  Store store(db.path);
  CHECK(store.schema_version() == kSchemaVersion);
  CHECK(text(store, "SELECT gpu_util_mean_pct FROM run_summary WHERE run_id = 1") == "97.0");
  CHECK(text(store, "SELECT host_cpu_util_mean_pct FROM run_summary WHERE run_id = 1") == "NULL");
  CHECK(text(store, "SELECT images_per_s FROM ranking") == "1000.0");
  const auto sweep = store.open_sweep("night", "exp", "");
  auto doc = host_doc(60, 40, 99);
  doc["run"]["hash"] = "h2";
  const auto id = store.record(sweep, doc);
  CHECK(text(store, "SELECT COUNT(*) FROM host_samples WHERE run_id = " + std::to_string(id)) ==
        "2");
  TempDb fresh;
  Store created(fresh.path);
  CHECK(schema_of(store.database()) == schema_of(created.database()));
}

TEST_CASE("diagnosis: an under-used GPU beside a busy host CPU gains the host's evidence",
          "[diagnosis][host]") {
  // Launch-bound by NVML, one core pegged: a single-threaded loader or launch thread.
  auto d = diagnose(host_doc(60, 12, 99));
  REQUIRE(d);
  CHECK(d->label == "launch-bound");
  CHECK_THAT(d->detail, Contains("input-bound hint: one host core pegged: the busiest of 16 "
                                 "cores 99% (at least 90%) while all average 12%"));
  // Every core busy.
  d = diagnose(host_doc(60, 93, 100));
  CHECK_THAT(d->detail, Contains("input-bound hint: host CPU busy: all of 16 cores 93% (at "
                                 "least 85%)"));
  // A host with CPU to spare adds nothing.
  CHECK_THAT(diagnose(host_doc(60, 40, 70))->detail, !Contains("host"));
  // A busy GPU needs no hint, however busy the host.
  d = diagnose(host_doc(97, 93, 100));
  CHECK(d->label == "compute-bound");
  CHECK_THAT(d->detail, !Contains("host CPU"));
  // Input-bound: the host's CPU says why the loader is slow.
  auto waiting = host_doc(60, 93, 100);
  waiting["metrics"]["data_wait_ms_mean"] = 200.0;  // of a 256 ms step
  d = diagnose(waiting);
  CHECK(d->label == "input-bound");
  CHECK_THAT(d->detail, Contains("; host CPU busy: all of 16 cores 93%"));
  // On a CPU run the host is the device: its busy cores are the work, not a hint.
  auto cpu = host_doc(60, 93, 100);
  cpu["device"] = "cpu";
  cpu["metrics"].erase("gpu_util_mean_pct");
  CHECK_THAT(diagnose(cpu)->detail, !Contains("host CPU busy"));
}
