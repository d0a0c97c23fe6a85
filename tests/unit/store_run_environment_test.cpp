// The run_environment view and RunRecord::environment carry every fact `orch compare` judges
// two nights by (torch threads, the watched variables, the CPU, the GPU memory cap), on a new
// file and on a version-6 file migrated to 7.
#include <catch2/catch.hpp>

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

const char* kEnvironment = R"({"hostname": "box", "cpu_model": "AMD Ryzen 9 7950X",
  "torch_threads": 1, "gpu_memory_cap_bytes": 8589934592, "device": "cuda:0",
  "gpu_uuid": "GPU-1234", "persistence_mode": false,
  "variables": {"OMP_NUM_THREADS": "1", "CUDA_MODULE_LOADING": "LAZY"}})";

}  // namespace

TEST_CASE("run_environment: torch threads, variables, CPU and memory cap, one column each",
          "[store][environment]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("night", "exp", "");
  auto doc = orch::test::result_doc("fp32", "h1", 0);
  doc["environment"] = nlohmann::json::parse(kEnvironment);
  const auto id = store.record(sweep, doc);
  const std::string where = " FROM run_environment WHERE run_id = " + std::to_string(id);
  CHECK(text(store, "SELECT torch_threads" + where) == "1");
  CHECK(text(store, "SELECT omp_num_threads" + where) == "1");
  CHECK(text(store, "SELECT cuda_module_loading" + where) == "LAZY");
  CHECK(text(store, "SELECT cuda_launch_blocking" + where) == "NULL");  // unset
  CHECK(text(store, "SELECT cpu_model" + where) == "AMD Ryzen 9 7950X");
  CHECK(text(store, "SELECT gpu_memory_cap_bytes" + where) == "8589934592");
  CHECK(text(store, "SELECT device" + where) == "cuda:0");
  CHECK(text(store, "SELECT gpu_uuid" + where) == "GPU-1234");
  CHECK(nlohmann::json::parse(text(store, "SELECT variables" + where)) ==
        nlohmann::json({{"OMP_NUM_THREADS", "1"}, {"CUDA_MODULE_LOADING", "LAZY"}}));

  const auto run = store.run(id);
  REQUIRE(run);
  CHECK(run->environment.at("torch_threads") == 1);
  CHECK(run->environment.at("variables").at("OMP_NUM_THREADS") == "1");
}

TEST_CASE("a version 6 database is migrated to version 7", "[store][migration]") {
  TempDb db;
  {
    Database v6(db.path);
    v6.exec("PRAGMA journal_mode=WAL");
    v6.exec(read_text(std::string(ORCH_SOURCE_DIR) + "/storage/migrations/schema_v6.sql"));
    v6.exec("PRAGMA user_version=6");
    v6.exec(R"(INSERT INTO sweeps (id, name, experiment, created_at, updated_at)
               VALUES (1, 'night', 'exp', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z'))");
    Statement ins(v6, R"(INSERT INTO runs (id, sweep_id, experiment, name, config_hash, repeat,
               status, attempts, images_per_s, config_json, environment_json) VALUES
               (1, 1, 'exp', 'fp32', 'h1', 0, 'ok', 1, 1000, '{}', ?1))");
    ins.bind(1, std::string(kEnvironment));
    ins.step();
    // v6's view has no such column: the migration is what adds it.
    CHECK_THROWS(v6.exec("SELECT torch_threads FROM run_environment"));
  }
  Store store(db.path);
  CHECK(store.schema_version() == kSchemaVersion);
  CHECK(text(store, "SELECT COUNT(*) FROM runs") == "1");
  CHECK(text(store, "SELECT torch_threads FROM run_environment WHERE run_id = 1") == "1");
  CHECK(text(store, "SELECT omp_num_threads FROM run_environment WHERE run_id = 1") == "1");
  TempDb fresh;
  Store created(fresh.path);
  CHECK(schema_of(store.database()) == schema_of(created.database()));
}
