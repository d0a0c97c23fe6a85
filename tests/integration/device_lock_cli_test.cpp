// One sweep per device (issue: two sweeps of different names on one machine both ran to the
// end, each several times slower, without a word). Two CPU sweeps into two databases: the
// second, under --no-wait, is refused naming the first and writes nothing; without it, it
// waits, says for whom, and its runs start only after the first sweep's last run ended.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "integration/test_support.h"
#include "process/child.h"
#include "storage/store.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

fs::path slow_experiment(const test::TempDir& tmp, const std::string& name) {
  const fs::path file = tmp.path() / (name + ".yaml");
  std::ofstream(file) << "name: " << name << "\nbase:\n"
                      << "  model: {plugin: fault, sleep_ms: 100}\n"
                      << "  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}\n"
                      << "  batch_size: 4\n  device: cpu\n  telemetry: {enabled: false}\n"
                      << "  steps: {warmup: 1, measure: 6}\n"
                      << "matrix:\n  seed: [1, 2]\n";
  return file;
}

std::string args(const fs::path& db) {
  return "--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR + "' ";
}

TEST_CASE("two sweeps on one device: the second waits for the first, or exits under --no-wait",
          "[sweep][device_lock]") {
  test::TempDir tmp;
  const fs::path db_a = tmp.path() / "a.db", db_b = tmp.path() / "b.db";
  const fs::path first = slow_experiment(tmp, "first"), second = slow_experiment(tmp, "second");
  process::ChildOptions o;
  o.argv = {ORCH_BINARY,           "--db",  db_a.string(), "--plugin-path",
            ORCH_FAULT_PLUGIN_DIR, "sweep", first.string()};
  o.out = process::Stdio::file((tmp.path() / "first.out").string());
  o.err = process::Stdio::file((tmp.path() / "first.err").string());
  process::Child a(o);
  // Until the first sweep has a run in flight (it holds the CPU's lock before its first run).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool running = false;
  while (!running && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!fs::exists(db_a)) continue;
    storage::Store store(db_a.string());
    if (auto id = store.find_sweep("first")) {
      for (const auto& r : store.runs(*id)) running = running || r.status == "running";
    }
  }
  REQUIRE(running);

  auto refused = test::run_orch(args(db_b) + "sweep --no-wait '" + second.string() + "'");
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("the CPU is in use by orch sweep 'first'"));
  CHECK_FALSE(fs::exists(db_b));  // nothing written

  auto waited = test::run_orch(args(db_b) + "sweep '" + second.string() + "'");
  INFO(waited.output);
  CHECK(waited.exit_code == 0);
  CHECK_THAT(waited.output, Contains("waiting for the CPU: in use by orch sweep 'first'"));
  const auto ended = a.wait();
  CHECK(ended.exit_code == 0);
  std::string last_finished, first_started = "9999";
  for (const auto& r : test::runs_of(db_a, "first"))
    last_finished = std::max(last_finished, r.finished_at);
  for (const auto& r : test::runs_of(db_b, "second"))
    first_started = std::min(first_started, r.started_at);
  INFO("first sweep's last run ended " << last_finished << ", second's first began "
                                       << first_started);
  CHECK(first_started >= last_finished);
}

}  // namespace
}  // namespace orch
