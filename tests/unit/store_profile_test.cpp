// Profiled runs in the store: the document's `profile` in run_profile / run_profile_ops and the
// run_summary view, read back with the run, replaced on a re-record; and the migration of a real
// version-2 file (made with the frozen v2 schema text) to version 3.
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "unit/profile_test_support.h"
#include "unit/schema_test_support.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using Catch::Matchers::Contains;
using orch::test::cpu_profile;
using orch::test::gpu_profile;
using orch::test::read_text;
using orch::test::result_doc;
using orch::test::schema_of;
using orch::test::TempDb;

namespace {

std::int64_t count(Store& store, const std::string& sql) {
  Statement st(store.database(), sql);
  REQUIRE(st.step());
  return st.column_int(0);
}

}  // namespace

TEST_CASE("a profiled run's summary lands in run_profile, run_profile_ops and run_summary",
          "[store][profile]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  auto doc = result_doc("amp", "h1", 0);
  doc["profile"] = gpu_profile();
  const auto id = store.record(sweep, doc);

  Statement p(store.database(), R"(SELECT steps, profiler, activities, trace_path, trace_bytes,
      step_ms, kernels_per_step, gpu_kernel_ms_per_step, gpu_busy_share, cuda_launches_per_step,
      cpu_ops_per_step, error, measured_step_ms, gpu_busy_share_profiled FROM run_profile
      WHERE run_id = ?1)");
  p.bind(1, id);
  REQUIRE(p.step());
  CHECK(p.column_int(0) == 5);
  CHECK(p.column_text(1) == "kineto");
  CHECK(p.column_text(2) == "cpu,cuda");
  CHECK(p.column_text(3) == "/results/q.db.runs/q/0123456789ab-r0/trace.json");
  CHECK(p.column_int(4) == 12345678);
  CHECK(p.column_double(5) == 40.0);
  CHECK(p.column_double(6) == 820.0);
  CHECK(p.column_double(7) == 9.5);
  CHECK(p.column_double(8) == 0.45);
  CHECK(p.column_double(9) == 790.0);
  CHECK(p.column_double(10) == 2400.0);
  CHECK(p.is_null(11));
  CHECK(p.column_double(12) == 20.0);
  CHECK(p.column_double(13) == 0.225);
  CHECK(count(store, "SELECT COUNT(*) FROM run_profile_ops WHERE kind = 'kernel'") == 2);
  CHECK(count(store, "SELECT COUNT(*) FROM run_profile_ops WHERE kind = 'cpu_op'") == 1);
  CHECK(count(store, "SELECT calls FROM run_profile_ops WHERE kind = 'kernel' AND position = 2") ==
        800);

  Statement v(store.database(), R"(SELECT profile_kernels_per_step, profile_gpu_busy_share,
      profile_trace FROM run_summary WHERE run_id = ?1)");
  v.bind(1, id);
  REQUIRE(v.step());
  CHECK(v.column_double(0) == 820.0);
  CHECK(v.column_double(1) == 0.45);
  CHECK(v.column_text(2) == "/results/q.db.runs/q/0123456789ab-r0/trace.json");

  const auto run = store.run(id);
  REQUIRE(run);
  REQUIRE(run->profile);
  CHECK(run->profile->gpu());
  CHECK(run->profile->steps == 5);
  CHECK(run->profile->kernels_per_step == 820.0);
  REQUIRE(run->profile->top_kernels.size() == 2);
  CHECK(run->profile->top_kernels[0].name == "sm90_xmma_gemm_bf16");
  CHECK(run->profile->top_kernels[1].calls == 800);
  REQUIRE(run->profile->top_cpu_ops.size() == 1);
  CHECK(run->profile->top_cpu_ops[0].self_ms == 6.0);
  // The diagnosis carries the trace's evidence (NVML said 97%: compute-bound, with a warning).
  CHECK(run->diagnosis == "compute-bound");
  CHECK_THAT(run->diagnosis_detail, Contains("trace: 820 kernels/step, mean kernel 12 us"));

  // Recording the same document again changes nothing; a retry without a profile removes it.
  store.record(sweep, doc);
  CHECK(count(store, "SELECT COUNT(*) FROM run_profile") == 1);
  CHECK(count(store, "SELECT COUNT(*) FROM run_profile_ops") == 3);
  store.record(sweep, result_doc("amp", "h1", 0));
  CHECK(count(store, "SELECT COUNT(*) FROM run_profile") == 0);
  CHECK(count(store, "SELECT COUNT(*) FROM run_profile_ops") == 0);
  CHECK_FALSE(store.run(id)->profile);
  Statement none(store.database(),
                 "SELECT profile_kernels_per_step FROM run_summary WHERE run_id = ?1");
  none.bind(1, id);
  REQUIRE(none.step());
  CHECK(none.is_null(0));
}

TEST_CASE("a CPU profile stores 0 kernels, no GPU numbers and the top host operators",
          "[store][profile]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  auto doc = result_doc("cpu", "h2", 0);
  doc["device"] = "cpu";
  doc["profile"] = cpu_profile();
  const auto id = store.record(sweep, doc);
  const auto run = store.run(id);
  REQUIRE(run->profile);
  CHECK_FALSE(run->profile->gpu());
  CHECK(run->profile->kernels_per_step == 0.0);
  CHECK_FALSE(run->profile->gpu_busy_share);
  CHECK(run->profile->trace_path.empty());
  CHECK(run->profile->top_kernels.empty());
  REQUIRE(run->profile->top_cpu_ops.size() == 2);
  CHECK(run->profile->top_cpu_ops[0].name == "aten::mkldnn_convolution");
  CHECK(count(store,
              "SELECT COUNT(*) FROM run_profile WHERE gpu_busy_share IS NULL AND "
              "kernels_per_step = 0 AND trace_path IS NULL") == 1);
}

TEST_CASE("a version 2 database is migrated to version 3", "[store][migration][profile]") {
  TempDb db;
  auto profiled = result_doc("amp", "p1", 0);
  profiled.erase("telemetry");
  profiled["metrics"].erase("gpu_util_mean_pct");
  profiled["profile"] = gpu_profile(0.40);
  {
    // A file as orch with schema 2 left it: one sweep, a plain run, and a run whose document
    // (recorded from a newer child process) already holds a profile that v2 had no table for.
    Database v2(db.path);
    v2.exec("PRAGMA journal_mode=WAL");
    v2.exec(read_text(std::string(ORCH_SOURCE_DIR) + "/storage/migrations/schema_v2.sql"));
    v2.exec("PRAGMA user_version=2");
    v2.exec(R"(INSERT INTO sweeps (id, name, experiment, created_at, updated_at)
               VALUES (1, 'night', 'exp', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z'))");
    Statement ins(v2, R"(INSERT INTO runs (id, sweep_id, experiment, name, config_hash, repeat,
        status, attempts, images_per_s, step_ms_mean, diagnosis, diagnosis_detail, config_json,
        document_json) VALUES (?1, 1, 'exp', ?2, ?3, 0, 'ok', 1, 1000, 256, ?4, 'old', '{}', ?5))");
    ins.bind(1, std::int64_t{1})
        .bind(2, std::string("fp32"))
        .bind(3, std::string("h1"))
        .bind(4, std::string("compute-bound"))
        .bind(5, result_doc("fp32", "h1", 0).dump());
    ins.step();
    ins.reset();
    ins.bind(1, std::int64_t{2})
        .bind(2, std::string("amp"))
        .bind(3, std::string("p1"))
        .bind(4, std::string("unknown (no telemetry)"))
        .bind(5, profiled.dump());
    ins.step();
    v2.exec("INSERT INTO run_metrics (run_id, name, value) VALUES (1, 'images_per_s', 1000)");
  }
  Store store(db.path);
  CHECK(store.schema_version() == kSchemaVersion);  // through version 3, on to the latest
  CHECK(count(store, "SELECT COUNT(*) FROM runs") == 2);
  CHECK(count(store, "SELECT COUNT(*) FROM run_metrics") == 1);
  // The profile held by the stored document is now in the tables, and its diagnosis uses it.
  CHECK(count(store, "SELECT COUNT(*) FROM run_profile") == 1);
  CHECK(count(store, "SELECT COUNT(*) FROM run_profile_ops") == 3);
  const auto amp = store.run(2);
  REQUIRE(amp->profile);
  CHECK(amp->profile->kernels_per_step == 820.0);
  CHECK(amp->diagnosis == "launch-bound");
  CHECK_THAT(amp->diagnosis_detail,
             Contains("GPU busy 40% of the 20.00 ms step (20% of the 40.00 ms profiled step)"));
  // Runs without a profile keep their stored diagnosis untouched.
  const auto fp32 = store.run(1);
  CHECK_FALSE(fp32->profile);
  CHECK(fp32->diagnosis_detail == "old");
  Statement v(store.database(),
              "SELECT profile_kernels_per_step FROM run_summary WHERE run_id = 2");
  REQUIRE(v.step());
  CHECK(v.column_double(0) == 820.0);
  Statement ic(store.database(), "PRAGMA integrity_check");
  REQUIRE(ic.step());
  CHECK(ic.column_text(0) == "ok");

  // The migrated file has exactly the schema of a new one.
  TempDb fresh_db;
  Store fresh(fresh_db.path);
  CHECK(schema_of(store.database()) == schema_of(fresh.database()));

  // And it takes new profiled runs.
  auto next = result_doc("bf16", "p2", 0);
  next["profile"] = gpu_profile();
  store.record(1, next);
  CHECK(count(store, "SELECT COUNT(*) FROM run_profile") == 2);
}
