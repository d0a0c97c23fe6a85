// One sweep per device (issue: two sweeps of different names on one machine both ran to the
// end, each several times slower, without a word). Two CPU sweeps into two databases: the
// second, under --no-wait, is refused naming the first and writes nothing; without it, it
// waits, says for whom, and its runs start only after the first sweep's last run ended. A
// Slurm task's `orch exec --supervise` waits for a device held by another in the same way.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "integration/test_support.h"
#include "process/child.h"
#include "storage/store.h"
#include "sweep/device_lock.h"

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

// Whether `file` comes to contain `text` within `limit`.
bool wait_for_text(const fs::path& file, const std::string& text, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (test::slurp(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST_CASE("a Slurm task's exec --supervise waits for a device another holds, then runs",
          "[exec][slurm][device_lock]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db", file = tmp.path() / "task.yaml";
  std::ofstream(file) << "name: task\nbase:\n"
                      << "  model: {plugin: fault, sleep_ms: 200}\n"
                      << "  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}\n"
                      << "  batch_size: 4\n  device: cpu\n  telemetry: {enabled: false}\n"
                      << "  steps: {warmup: 1, measure: 8}\n";
  // The specification a Slurm task is given, from the submission folder orch writes for sbatch.
  auto submitted = test::run_orch(args(db) + "submit --slurm --dry-run '" + file.string() + "'");
  INFO(submitted.output);
  REQUIRE(submitted.exit_code == 0);
  const fs::path spec = fs::path(db.string() + ".slurm") / "task" / "specs" / "0.json";
  REQUIRE(fs::is_regular_file(spec));
  const fs::path out = tmp.path() / "result.json", work = tmp.path() / "work";

  // Another holder of the CPU's lock (this test process, as a sweep on the node would be).
  std::atomic<bool> no_stop{false};
  std::ostringstream ignored;
  const std::vector<sweep::LockedDevice> cpu = {{"cpu", "the CPU"}};
  auto held = sweep::DeviceLocks::acquire(cpu, "orch sweep 'night' (pid 1)", /*wait=*/false,
                                          ignored, no_stop);
  REQUIRE(held);

  process::ChildOptions o;
  o.argv = {ORCH_BINARY,   "--plugin-path", ORCH_FAULT_PLUGIN_DIR, "exec",
            "--supervise", "--spec",        spec.string(),         "--out",
            out.string(),  "--work-dir",    work.string()};
  o.env = {{"SLURM_ARRAY_JOB_ID", "77"}, {"SLURM_ARRAY_TASK_ID", "0"}};
  const fs::path said = tmp.path() / "task.out";
  o.out = process::Stdio::file(said.string());
  o.err = process::Stdio::file((tmp.path() / "task.err").string());
  process::Child task(o);
  const auto logs = [&] {
    return "stdout: " + test::slurp(said) + "\nstderr: " + test::slurp(tmp.path() / "task.err");
  };
  {
    const bool waiting =
        wait_for_text(said, "waiting for the CPU: in use by orch sweep 'night' (pid 1)",
                      std::chrono::seconds(120));
    INFO(logs());
    REQUIRE(waiting);
  }
  // Held: the task waits, and its run has not started (no child, no work folder, no result).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK_FALSE(task.poll().has_value());
  CHECK_FALSE(fs::exists(work));
  CHECK_FALSE(fs::exists(out));

  held.reset();
  {
    const bool started = wait_for_text(said, "the CPU is free: starting", std::chrono::seconds(30));
    INFO(logs());
    REQUIRE(started);
  }
  // Its run (9 steps of 200 ms) holds the CPU: another orch is refused, with the task named.
  try {
    sweep::DeviceLocks::acquire(cpu, "orch sweep 'other'", /*wait=*/false, ignored, no_stop);
    FAIL("the CPU was taken while the task's run held it");
  } catch (const sweep::DeviceBusy& e) {
    CHECK_THAT(e.what(),
               Contains("the CPU is in use by orch exec --supervise in Slurm job 77_0 'task: "));
  }
  const auto ended = task.wait();
  INFO(logs());
  CHECK(ended.exit_code == 0);
  const auto doc = nlohmann::json::parse(test::slurp(out));
  CHECK(doc.at("status") == "ok");
  // Released with the task: the next holder takes the CPU at once.
  CHECK(sweep::DeviceLocks::acquire(cpu, "orch sweep 'next'", /*wait=*/false, ignored, no_stop));
}

}  // namespace
}  // namespace orch
