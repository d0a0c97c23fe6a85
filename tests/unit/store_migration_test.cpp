// Migration of a real schema-version-1 database (made with the frozen v1 schema text) to
// version 2: every run kept with its id, metrics and steps; one sweep per experiment;
// duplicated (experiment, hash, repeat) rows become extra repeats.
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "unit/schema_test_support.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using orch::test::read_text;
using orch::test::result_doc;
using orch::test::TempDb;

namespace {

// Inserts a run the way orch 0.1.0's Store::record did.
void insert_v1(Database& db, const std::string& experiment, const std::string& name,
               const std::string& hash, int repeat, const std::string& status, double ips) {
  auto doc = result_doc(name, hash, repeat, status, ips, experiment);
  doc["version"] = 1;
  doc.erase("telemetry");
  doc.erase("gpu");
  Statement ins(db, R"(INSERT INTO runs (experiment, name, config_hash, repeat, status, error,
      model, data, precision, stream, batch_size, memory_format, device, images_per_s,
      step_ms_mean, started_at, finished_at, config_json, environment_json, document_json)
      VALUES (?1, ?2, ?3, ?4, ?5, NULL, 'resnet', 'synthetic', 'amp', 'default', 256,
              'channels_last', 'cuda:0', ?6, ?7, '2024-05-01T10:00:00Z', '2024-05-01T10:01:00Z',
              ?8, ?9, ?10))");
  ins.bind(1, experiment).bind(2, name).bind(3, hash).bind(4, std::int64_t{repeat}).bind(5, status);
  if (status == "ok")
    ins.bind(6, ips).bind(7, 256000.0 / ips);
  else
    ins.bind_null(6).bind_null(7);
  ins.bind(8, doc["config"].dump()).bind(9, doc["environment"].dump()).bind(10, doc.dump());
  ins.step();
  const auto id = db.last_insert_rowid();
  if (status == "ok") {
    Statement met(db, "INSERT INTO run_metrics (run_id, name, value) VALUES (?1, ?2, ?3)");
    for (const auto& [k, v] : doc["metrics"].items()) {
      met.bind(1, id).bind(2, k).bind(3, v.get<double>());
      met.step();
      met.reset();
    }
    Statement step(db,
                   "INSERT INTO run_steps (run_id, step, step_ms, data_wait_ms, loss) VALUES (?1, "
                   "?2, 10, 0.5, 6.9)");
    for (std::int64_t s = 0; s < 3; ++s) {
      step.bind(1, id).bind(2, s);
      step.step();
      step.reset();
    }
  }
}

std::int64_t count(Store& store, const std::string& sql) {
  Statement st(store.database(), sql);
  REQUIRE(st.step());
  return st.column_int(0);
}

}  // namespace

TEST_CASE("a version 1 database is migrated to the current version keeping every run",
          "[store][migration]") {
  TempDb db;
  {
    Database v1(db.path);
    v1.exec("PRAGMA journal_mode=WAL");
    v1.exec(read_text(std::string(ORCH_SOURCE_DIR) + "/storage/migrations/schema_v1.sql"));
    v1.exec("PRAGMA user_version=1");
    // quickstart, run twice (orch 0.1.0 appended rows: hash q1 repeat 0 appears twice)
    insert_v1(v1, "quickstart", "fp32", "q1", 0, "ok", 1000);  // id 1
    insert_v1(v1, "quickstart", "amp", "q2", 0, "ok", 2000);   // id 2
    insert_v1(v1, "quickstart", "fp32", "q1", 0, "ok", 1100);  // id 3: duplicate
    insert_v1(v1, "quickstart", "amp", "q2", 0, "failed", 0);  // id 4: duplicate
    insert_v1(v1, "quickstart", "fp32", "q1", 0, "ok", 1200);  // id 5: duplicate again
    // another experiment with two repeats
    insert_v1(v1, "other", "x", "o1", 0, "ok", 500);  // id 6
    insert_v1(v1, "other", "x", "o1", 1, "ok", 700);  // id 7
  }
  Store store(db.path);
  CHECK(store.schema_version() == kSchemaVersion);

  CHECK(count(store, "SELECT COUNT(*) FROM runs") == 7);
  CHECK(count(store, "SELECT COUNT(*) FROM run_metrics") == 6 * 6);
  CHECK(count(store, "SELECT COUNT(*) FROM run_steps") == 6 * 3);
  CHECK(count(store, "SELECT COUNT(*) FROM sweeps") == 2);
  CHECK(count(store, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'v1_%'") == 0);
  // foreign keys still point at the right rows
  CHECK(count(store,
              "SELECT COUNT(*) FROM run_metrics m LEFT JOIN runs r ON r.id = m.run_id WHERE r.id "
              "IS NULL") == 0);
  Statement fk(store.database(), "PRAGMA foreign_key_check");
  CHECK_FALSE(fk.step());
  Statement ic(store.database(), "PRAGMA integrity_check");
  REQUIRE(ic.step());
  CHECK(ic.column_text(0) == "ok");

  const auto quick = store.find_sweep("quickstart");
  REQUIRE(quick);
  const auto states = store.run_states(*quick);
  REQUIRE(states.size() == 5);
  // first rows keep their index; duplicates become max(repeat)+1, +2 in recording order
  CHECK(states.at({"q1", 0}).id == 1);
  CHECK(states.at({"q1", 1}).id == 3);
  CHECK(states.at({"q1", 2}).id == 5);
  CHECK(states.at({"q2", 0}).id == 2);
  CHECK(states.at({"q2", 1}).id == 4);
  CHECK(states.at({"q2", 1}).status == "failed");
  for (const auto& [key, s] : states) CHECK(s.attempts == 1);

  const auto other = store.find_sweep("other");
  REQUIRE(other);
  CHECK(store.run_states(*other).at({"o1", 1}).id == 7);

  // Columns filled from the documents; the diagnosis computed for the ok runs.
  const auto run = store.run(1);
  REQUIRE(run);
  CHECK(run->gpu_name == "NVIDIA H200");
  CHECK(run->torch_version == "2.11.0");
  CHECK(run->duration_s == 60.0);
  CHECK(run->diagnosis == "compute-bound");
  CHECK(run->metric("images_per_s") == 1000.0);

  // The ranking is what v1's was: q1 over 3 runs, mean 1100.
  const auto ranking = store.ranking("quickstart");
  REQUIRE(ranking.size() == 2);
  CHECK(ranking[0].name == "amp");
  CHECK(ranking[1].runs == 3);
  CHECK(ranking[1].images_per_s == Approx(1100));

  // New runs can be recorded into the migrated sweep, and ids continue after the old ones.
  const auto id = store.record(*quick, result_doc("bf16", "q3", 0, "ok", 3000, "quickstart"));
  CHECK(id == 8);
}

TEST_CASE("an empty version 1 database migrates too", "[store][migration]") {
  TempDb db;
  {
    Database v1(db.path);
    v1.exec(read_text(std::string(ORCH_SOURCE_DIR) + "/storage/migrations/schema_v1.sql"));
    v1.exec("PRAGMA user_version=1");
  }
  Store store(db.path);
  CHECK(store.schema_version() == kSchemaVersion);
  CHECK(count(store, "SELECT COUNT(*) FROM sweeps") == 0);
  CHECK(count(store, "SELECT COUNT(*) FROM student_t_975") == 1000);
}
