// The life of a run in the store, as the scheduler drives it: sweeps, begin_run, heartbeat,
// record, retry, interruption, resume state; and record's idempotency (a Slurm ingest relies on
// it).
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using Catch::Matchers::Contains;
using orch::test::result_doc;
using orch::test::TempDb;

namespace {

std::int64_t count(Store& store, const std::string& sql, std::int64_t id = -1) {
  Statement st(store.database(), sql);
  if (id >= 0) st.bind(1, id);
  REQUIRE(st.step());
  return st.column_int(0);
}

nlohmann::json header_of(const nlohmann::json& doc) {
  return {{"experiment", doc["experiment"]}, {"run", doc["run"]}, {"config", doc["config"]}};
}

}  // namespace

TEST_CASE("open_sweep creates a sweep once, by name, and updates it", "[store][lifecycle]") {
  TempDb db;
  Store store(db.path);
  CHECK_FALSE(store.find_sweep("night").has_value());
  const auto id = store.open_sweep("night", "exp", "exp.yaml", "first");
  CHECK(store.find_sweep("night") == id);
  CHECK(store.open_sweep("night", "exp", "other.yaml") == id);
  const auto info = store.sweep(id);
  REQUIRE(info);
  CHECK(info->experiment == "exp");
  CHECK(info->experiment_file == "other.yaml");
  CHECK(info->description == "first");  // an empty description keeps the old one
  CHECK_THROWS_WITH(store.open_sweep("night", "another-exp", ""),
                    Contains("belongs to experiment 'exp'"));
  const auto second = store.open_sweep("day", "exp", "");
  CHECK(second != id);
  CHECK(store.sweeps().size() == 2);
}

TEST_CASE("begin_run, heartbeat and record: one row through the whole life of a run",
          "[store][lifecycle]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  const auto doc = result_doc("amp/b256", "h1", 0, "ok", 2000);
  const auto id = store.begin_run(sweep, header_of(doc), "node1", 4242, "1");

  auto states = store.run_states(sweep);
  REQUIRE(states.size() == 1);
  const RunState& s = states.at({"h1", 0});
  CHECK(s.id == id);
  CHECK(s.status == "running");
  CHECK(s.owner_host == "node1");
  CHECK(s.owner_pid == 4242);
  CHECK(s.attempts == 1);
  CHECK_FALSE(s.heartbeat_at.empty());
  CHECK(s.batch_size == 256);
  CHECK_FALSE(s.duration_s.has_value());
  store.heartbeat(id);

  auto final_doc = doc;
  final_doc.erase("gpu");  // the runner's document need not repeat the gpu: the row keeps it
  CHECK(store.record(sweep, final_doc) == id);
  states = store.run_states(sweep);
  REQUIRE(states.size() == 1);
  CHECK(states.at({"h1", 0}).status == "ok");
  CHECK(states.at({"h1", 0}).attempts == 1);
  CHECK(states.at({"h1", 0}).duration_s == 60.0);
  const auto run = store.run(id);
  REQUIRE(run);
  CHECK(run->gpu == "1");
  CHECK(run->metric("images_per_s") == 2000.0);
  CHECK(run->diagnosis == "compute-bound");
}

TEST_CASE("a retry reuses the row, counts the attempt and drops the old attempt's data",
          "[store][lifecycle]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  const auto ok = result_doc("a", "h1", 0, "ok", 2000);
  const auto id = store.begin_run(sweep, header_of(ok), "node1", 1, "0");
  auto failed = result_doc("a", "h1", 0, "failed");
  failed["metrics"] = {{"images_per_s", 5.0}, {"stale_metric", 1.0}};
  failed["steps"] = {{{"step", 0}, {"step_ms", 1.0}}};
  CHECK(store.record(sweep, failed) == id);
  CHECK(count(store, "SELECT COUNT(*) FROM run_metrics WHERE name = 'stale_metric'") == 1);

  // Retry: the same row, attempts 2, the failed attempt's outcome and data gone.
  CHECK(store.begin_run(sweep, header_of(ok), "node2", 2, "1") == id);
  CHECK(count(store, "SELECT COUNT(*) FROM run_metrics WHERE run_id = ?1", id) == 0);
  CHECK(count(store, "SELECT COUNT(*) FROM run_steps WHERE run_id = ?1", id) == 0);
  Statement cleared(store.database(),
                    "SELECT status, error, term_signal, owner_host, gpu FROM runs WHERE id = ?1");
  cleared.bind(1, id);
  REQUIRE(cleared.step());
  CHECK(cleared.column_text(0) == "running");
  CHECK(cleared.is_null(1));
  CHECK(cleared.is_null(2));
  CHECK(cleared.column_text(3) == "node2");
  CHECK(cleared.column_text(4) == "1");

  CHECK(store.record(sweep, ok) == id);
  CHECK(count(store, "SELECT COUNT(*) FROM runs") == 1);
  CHECK(count(store, "SELECT attempts FROM runs WHERE id = ?1", id) == 2);
  CHECK(count(store, "SELECT COUNT(*) FROM run_metrics WHERE name = 'stale_metric'") == 0);
  CHECK(count(store, "SELECT COUNT(*) FROM run_steps WHERE run_id = ?1", id) == 2);
  CHECK(count(store, "SELECT COUNT(*) FROM telemetry_samples WHERE run_id = ?1", id) == 2);
  CHECK(store.run(id)->status == "ok");
}

TEST_CASE("recording the same document twice leaves exactly one row with the same contents",
          "[store][lifecycle]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  const auto doc = result_doc("a", "h1", 0, "ok", 1234);
  const auto first = store.record(sweep, doc);
  const std::string sql = R"(SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM run_metrics),
      (SELECT COUNT(*) FROM run_steps), (SELECT COUNT(*) FROM telemetry_samples),
      (SELECT attempts FROM runs), (SELECT document_json FROM runs))";
  auto snapshot = [&] {
    Statement st(store.database(), sql);
    st.step();
    return std::vector<std::string>{st.column_text(0), st.column_text(1), st.column_text(2),
                                    st.column_text(3), st.column_text(4), st.column_text(5)};
  };
  const auto before = snapshot();
  CHECK(store.record(sweep, doc) == first);
  CHECK(snapshot() == before);
  CHECK(before[0] == "1");
  CHECK(before[4] == "1");
  // Recorded without begin_run (orch run, an ingest): attempts 1, no owner.
  CHECK(count(store, "SELECT owner_pid IS NULL FROM runs") == 1);
  // The same document in another sweep is another run.
  const auto other = store.open_sweep("t", "exp", "");
  CHECK(store.record(other, doc) != first);
  CHECK(count(store, "SELECT COUNT(*) FROM runs") == 2);
}

TEST_CASE("mark_interrupted ends a running run but never a finished one", "[store][lifecycle]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  const auto running = store.begin_run(sweep, header_of(result_doc("a", "h1", 0)), "n", 1, "0");
  const auto done = store.record(sweep, result_doc("b", "h2", 0));
  store.mark_interrupted(running, "orchestrator pid 1 on n is gone");
  store.mark_interrupted(done, "should not apply");
  const auto a = store.run(running);
  CHECK(a->status == "interrupted");
  CHECK(a->error == "orchestrator pid 1 on n is gone");
  CHECK_FALSE(a->finished_at.empty());
  CHECK(store.run(done)->status == "ok");
  CHECK(store.run(done)->error.empty());
}

TEST_CASE("run_states keys every run of one sweep by (hash, repeat)", "[store][lifecycle]") {
  TempDb db;
  Store store(db.path);
  const auto s1 = store.open_sweep("s1", "exp", "");
  const auto s2 = store.open_sweep("s2", "exp", "");
  store.record(s1, result_doc("a", "h1", 0));
  store.record(s1, result_doc("a", "h1", 1));
  store.record(s1, result_doc("b", "h2", 0, "oom"));
  store.record(s2, result_doc("a", "h1", 0));
  const auto states = store.run_states(s1);
  REQUIRE(states.size() == 3);
  CHECK(states.at({"h1", 1}).status == "ok");
  CHECK(states.at({"h2", 0}).status == "oom");
  CHECK(store.run_states(s2).size() == 1);
}

TEST_CASE("batch_auto and an auto batch size are recorded", "[store][lifecycle]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  auto doc = result_doc("auto", "h1", 0);
  doc["config"]["batch_size"] = "auto";
  doc["batch_size"] = 512;
  doc["batch_auto"] = true;
  const auto id = store.record(sweep, doc);
  const auto run = store.run(id);
  CHECK(run->batch_auto);
  CHECK(run->batch_size == 512);
}
