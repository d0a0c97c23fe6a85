// `isolation: worker` for real on the CPU: runs sent one after another to a warm
// `orch exec --worker`, the fault plugin failing some of them in the middle of the queue. Each
// fault costs its run only, the next run is `ok` in a fresh worker, `ok` runs share one worker,
// SIGTERM stops a worker run as it stops a run's own process, and nothing is left running.
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "integration/test_support.h"
#include "process/child.h"
#include "storage/store.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

fs::path write_file(const TempDir& tmp, const std::string& name, const std::string& text) {
  const fs::path file = tmp.path() / (name + ".yaml");
  std::ofstream(file) << text;
  return file;
}

// The fault model, tiny, on the CPU, every run in a worker.
std::string experiment(const std::string& name, const std::string& base_extra,
                       const std::string& matrix) {
  return "name: " + name +
         "\nbase:\n"
         "  isolation: worker\n"
         "  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}\n"
         "  batch_size: 4\n"
         "  device: cpu\n"
         "  telemetry: {enabled: false}\n" +
         base_extra + "matrix:\n" + matrix;
}

std::vector<storage::RunRecord> runs_in_order(const fs::path& db, const std::string& sweep) {
  storage::Store store(db.string());
  const auto id = store.find_sweep(sweep);
  if (!id) return {};
  auto runs = store.runs(*id);
  // A run's row is made when it starts (Store::begin_run): ids are the order runs started in.
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return runs;
}

long worker_pid(const storage::RunRecord& r) {
  const auto& e = r.environment;
  if (!e.contains("worker") || !e["worker"].contains("pid")) return 0;
  return e["worker"]["pid"].get<long>();
}

int worker_run(const storage::RunRecord& r) {
  const auto& e = r.environment;
  if (!e.contains("worker") || !e["worker"].contains("run")) return 0;
  return e["worker"]["run"].get<int>();
}

// Running, or stopped: anything but gone or a zombie.
bool alive(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

bool wait_for(const std::function<bool()>& cond, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string orch_args(const fs::path& db) {
  return "--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR + "' ";
}

int count_with_status(const fs::path& db, const std::string& sweep, const std::string& status) {
  int n = 0;
  for (const auto& r : runs_in_order(db, sweep)) n += r.status == status;
  return n;
}

}  // namespace

TEST_CASE(
    "worker: a crash, a hang, an OOM and a failure mid-queue each cost one run; the next "
    "is ok in a fresh worker",
    "[sweep][worker]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // Matrix order: two healthy runs, then each fault (at_step 2) followed by a healthy run
  // (at_step 100 is never reached: 4 forward passes).
  const auto file = write_file(
      tmp, "faults",
      experiment("faults",
                 "  model: {plugin: fault}\n  steps: {warmup: 1, measure: 3}\n"
                 "  timeout: 4\n",
                 "  model.mode: [none, segfault, hang, oom, throw]\n  model.at_step: [2, 100]\n"));
  auto r = test::run_orch(orch_args(db) + "sweep --max-consecutive-failures 10 --grace 1 '" +
                          file.string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  const auto runs = runs_in_order(db, "faults");
  REQUIRE(runs.size() == 10);
  const std::vector<std::string> expected = {"ok", "ok",  "failed", "ok",     "timeout",
                                             "ok", "oom", "ok",     "failed", "ok"};
  std::set<long> pids;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    INFO(i << ": " << runs[i].name << ": " << runs[i].error << "\n" << runs[i].environment.dump());
    CHECK(runs[i].status == expected[i]);
    REQUIRE(worker_pid(runs[i]) > 0);
    pids.insert(worker_pid(runs[i]));
  }
  CHECK(runs[2].term_signal == 11);
  CHECK(runs[4].error.find("timeout of 4 s") != std::string::npos);
  CHECK(runs[8].error.find("injected exception at step 2") != std::string::npos);
  // Two ok runs in a row: one worker, its first and second run.
  CHECK(worker_pid(runs[1]) == worker_pid(runs[0]));
  CHECK(worker_run(runs[0]) == 1);
  CHECK(worker_run(runs[1]) == 2);
  // Each fault ran in the worker of the ok run before it; the run after it in a fresh one.
  for (std::size_t fault : {2u, 4u, 6u, 8u}) {
    INFO("fault at " << fault << ": " << runs[fault].name);
    CHECK(worker_pid(runs[fault]) == worker_pid(runs[fault - 1]));
    CHECK(worker_run(runs[fault]) == worker_run(runs[fault - 1]) + 1);
    CHECK(worker_pid(runs[fault + 1]) != worker_pid(runs[fault]));
    CHECK(worker_run(runs[fault + 1]) == 1);
  }
  CHECK(pids.size() == 5);  // the first worker, and one after each fault
  // The sweep has ended: no worker outlives it.
  CHECK(wait_for(
      [&] {
        for (long pid : pids)
          if (alive(pid)) return false;
        return true;
      },
      10));
}

TEST_CASE("worker: a diverged run (NaN loss) costs one run, the next is ok in a fresh worker",
          "[sweep][worker]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // The fault model with no normalisation: SGD at lr 1e30 overflows within a step or two.
  const auto file =
      write_file(tmp, "lr",
                 experiment("lr", "  model: {plugin: fault}\n  steps: {warmup: 1, measure: 3}\n",
                            "  optimizer.lr: [0.01, 0.02, 1.0e30, 0.03]\n"));
  auto r = test::run_orch(orch_args(db) + "sweep '" + file.string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  const auto runs = runs_in_order(db, "lr");
  REQUIRE(runs.size() == 4);
  CHECK(runs[0].status == "ok");
  CHECK(runs[1].status == "ok");
  CHECK(runs[2].status == "diverged");
  CHECK(runs[3].status == "ok");
  CHECK(worker_pid(runs[1]) == worker_pid(runs[0]));
  CHECK(worker_pid(runs[2]) == worker_pid(runs[1]));
  CHECK(worker_pid(runs[3]) != worker_pid(runs[2]));
  CHECK(worker_run(runs[3]) == 1);
  // A warm run's start-up is what it paid itself, far below the fresh process's.
  REQUIRE(runs[1].metric("startup_s"));
  CHECK(*runs[1].metric("startup_s") < 1.0);
}

TEST_CASE("worker: SIGTERM mid-run records it interrupted, leaves no process, resume finishes",
          "[sweep][worker]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // 1 + 8 forward passes of 100 ms: about a second per run.
  const auto file = write_file(
      tmp, "resume",
      experiment("resume",
                 "  model: {plugin: fault, sleep_ms: 100}\n  steps: {warmup: 1, measure: 8}\n",
                 "  seed: [0, 1, 2, 3]\n"));
  {
    process::ChildOptions o;
    o.argv = {ORCH_BINARY,           "--db",  db.string(),  "--plugin-path",
              ORCH_FAULT_PLUGIN_DIR, "sweep", file.string()};
    o.out = process::Stdio::file((tmp.path() / "first.log").string());
    o.err = process::Stdio::file((tmp.path() / "first.err").string());
    process::Child sweep(o);
    REQUIRE(wait_for([&] { return fs::exists(db) && count_with_status(db, "resume", "ok") >= 1; },
                     120));
    ::kill(sweep.pid(), SIGTERM);
    const auto st = sweep.wait();
    CHECK(st.exit_code == 3);
  }
  CHECK(count_with_status(db, "resume", "running") == 0);
  CHECK(count_with_status(db, "resume", "interrupted") >= 1);
  std::set<long> pids;
  for (const auto& run : runs_in_order(db, "resume")) {
    if (run.status == "interrupted" || run.status == "ok") {
      INFO(run.name << " " << run.status << " " << run.environment.dump());
      CHECK(worker_pid(run) > 0);
      pids.insert(worker_pid(run));
    }
  }
  const auto none_alive = [&] {
    for (long pid : pids)
      if (alive(pid)) return false;
    return true;
  };
  CHECK(wait_for(none_alive, 10));

  auto again = test::run_orch(orch_args(db) + "sweep '" + file.string() + "'");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(count_with_status(db, "resume", "ok") == 4);
  // The resumed runs went to a new worker (the old one is gone), and shared it.
  std::set<long> resumed;
  for (const auto& run : runs_in_order(db, "resume")) {
    if (worker_run(run) >= 1 && pids.count(worker_pid(run)) == 0) resumed.insert(worker_pid(run));
  }
  CHECK(resumed.size() == 1);
  for (long pid : resumed) pids.insert(pid);
  CHECK(wait_for(none_alive, 10));
}

}  // namespace orch
