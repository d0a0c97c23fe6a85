// The SQLite store: schema creation and version, recording documents, ranking, refusal of a
// newer schema.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include "storage/store.h"

using namespace orch::storage;
using Catch::Matchers::Contains;

namespace {

struct TempDb {
  TempDb() {
    std::random_device rd;
    path = (std::filesystem::temp_directory_path() / ("orch-store-" + std::to_string(rd()) + ".db"))
               .string();
  }
  ~TempDb() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
  std::string path;
};

nlohmann::json document(const std::string& name, const std::string& hash, int repeat,
                        const char* status, double ips) {
  nlohmann::json d = {{"format", "orch.result"},
                      {"version", 1},
                      {"experiment", "exp"},
                      {"run", {{"name", name}, {"hash", hash}, {"repeat", repeat}}},
                      {"config", {{"precision", {{"plugin", "amp"}, {"dtype", "bf16"}}},
                                  {"batch_size", 256},
                                  {"memory_format", "channels_last"}}},
                      {"status", status},
                      {"device", "cuda:0"}};
  if (std::string(status) == "ok") {
    d["metrics"] = {{"images_per_s", ips}, {"step_ms_mean", 256000.0 / ips}};
    d["steps"] = {{{"step", 0}, {"step_ms", 10.0}, {"loss", 6.9}},
                  {{"step", 1}, {"step_ms", 11.0}, {"loss", 6.8}}};
  } else {
    d["error"] = "boom";
  }
  return d;
}

}  // namespace

TEST_CASE("a new database gets the current schema in WAL mode", "[store]") {
  TempDb db;
  Store store(db.path);
  CHECK(store.schema_version() == kSchemaVersion);
  Statement st(store.database(), "PRAGMA journal_mode");
  REQUIRE(st.step());
  CHECK(st.column_text(0) == "wal");
}

TEST_CASE("recorded runs are ranked per configuration, failures excluded", "[store]") {
  TempDb db;
  Store store(db.path);
  store.record(document("slow", "h1", 0, "ok", 1000));
  store.record(document("fast", "h2", 0, "ok", 3000));
  store.record(document("fast", "h2", 1, "ok", 2000));
  store.record(document("broken", "h3", 0, "failed", 0));
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

  Statement steps(store.database(), "SELECT COUNT(*) FROM run_steps");
  steps.step();
  CHECK(steps.column_int(0) == 6);
  Statement failed(store.database(), "SELECT error FROM runs WHERE status = 'failed'");
  REQUIRE(failed.step());
  CHECK(failed.column_text(0) == "boom");
}

TEST_CASE("names with quotes are stored as data, not SQL", "[store]") {
  TempDb db;
  Store store(db.path);
  const std::string evil = "x'); DROP TABLE runs; --";
  store.record(document(evil, "h1", 0, "ok", 100));
  const auto rows = store.ranking();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].name == evil);
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
}
