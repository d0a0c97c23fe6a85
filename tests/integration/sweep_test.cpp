// `orch sweep` for real on the CPU: every outcome a run can have, produced by the fault plugin
// in child processes; kill -9 of the orchestrator and resume; SIGTERM; batch_size: auto.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "integration/test_support.h"
#include "process/child.h"
#include "storage/store.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

std::string fault_plugin_path() {
  return std::string("--plugin-path '") + ORCH_FAULT_PLUGIN_DIR + "'";
}

// A tiny CPU configuration on the fault model; `base_extra` lines are added under `base:`
// (they may replace the model, data or steps lines), `matrix` under `matrix:`.
fs::path write_experiment(const TempDir& tmp, const std::string& name,
                          const std::string& base_extra, const std::string& matrix) {
  std::map<std::string, std::string> base = {
      {"model", "{plugin: fault}"},
      {"data", "{plugin: synthetic, image_size: 8, classes: 4, batches: 1}"},
      {"batch_size", "4"},
      {"device", "cpu"},
      {"steps", "{warmup: 1, measure: 3}"},
      {"telemetry", "{enabled: false}"}};
  std::istringstream extra(base_extra);
  for (std::string line; std::getline(extra, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(' ');
    base[line.substr(start, colon - start)] = line.substr(colon + 2);
  }
  const fs::path file = tmp.path() / (name + ".yaml");
  std::ofstream out(file);
  out << "name: " << name << "\nbase:\n";
  for (const auto& [k, v] : base) out << "  " << k << ": " << v << "\n";
  out << "matrix:\n" << matrix;
  return file;
}

std::map<std::string, storage::RunRecord> runs_by_name(const fs::path& db,
                                                       const std::string& sweep) {
  storage::Store store(db.string());
  auto id = store.find_sweep(sweep);
  REQUIRE(id.has_value());
  std::map<std::string, storage::RunRecord> out;
  for (auto& r : store.runs(*id)) out[r.name] = r;
  return out;
}

std::string integrity(const fs::path& db) {
  storage::Store store(db.string());
  storage::Statement st(store.database(), "PRAGMA integrity_check");
  st.step();
  return st.column_text(0);
}

TEST_CASE("sweep: every fault outcome is recorded and the next run still succeeds", "[sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // Matrix order puts a healthy run (at_step 100 is never reached: 4 forward passes) right
  // after each fault; K is high so the CPU slot is never retired.
  const auto faults =
      write_experiment(tmp, "faults", "  timeout: 4\n",
                       R"(  model.mode: [segfault, abort, throw, hang, oom, exit, none]
  model.at_step: [2, 100]
)");
  auto r =
      test::run_orch("--db '" + db.string() + "' " + fault_plugin_path() +
                     " sweep --max-consecutive-failures 10 --grace 1 '" + faults.string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 1);  // something failed
  auto runs = runs_by_name(db, "faults");
  REQUIRE(runs.size() == 14);
  auto status_of = [&](const std::string& mode) -> const storage::RunRecord& {
    for (auto& [name, rec] : runs) {
      const auto& params = rec.config["model"]["params"];
      if (params["mode"] == mode && params["at_step"] == 2) return rec;
    }
    FAIL("no run for mode " << mode);
    throw std::logic_error("unreachable");
  };
  for (auto& [name, rec] : runs) {
    if (rec.config["model"]["params"]["at_step"] == 100) {
      INFO(name);
      CHECK(rec.status == "ok");  // fresh process after every kind of failure
    }
  }
  CHECK(status_of("none").status == "ok");
  CHECK(status_of("segfault").status == "failed");
  CHECK(status_of("segfault").error.find("signal 11 (SIGSEGV)") != std::string::npos);
  CHECK(status_of("segfault").term_signal == 11);
  CHECK(status_of("abort").status == "failed");
  CHECK(status_of("abort").term_signal == 6);
  CHECK(status_of("throw").status == "failed");
  CHECK(status_of("throw").error.find("injected exception at step 2") != std::string::npos);
  CHECK(status_of("hang").status == "timeout");
  CHECK(status_of("hang").error.find("timeout of 4 s") != std::string::npos);
  CHECK(status_of("oom").status == "oom");
  CHECK(status_of("oom").error.find("batch size 4") != std::string::npos);
  CHECK(status_of("exit").status == "failed");
  CHECK(status_of("exit").exit_code == 3);
  CHECK(status_of("exit").error.find("exit code 3") != std::string::npos);
  CHECK(r.output.find("[14/14]") != std::string::npos);
  CHECK(integrity(db) == "ok");

  SECTION("running the same command again runs nothing; --retry-failed reruns the failures") {
    auto again = test::run_orch("--db '" + db.string() + "' " + fault_plugin_path() +
                                " sweep --grace 1 '" + faults.string() + "'");
    INFO(again.output);
    CHECK(again.output.find("14 already finished, 0 to run") != std::string::npos);
    // Nothing ran, but runs of the plan are recorded failed: cron must not read success.
    CHECK(again.exit_code == 1);
  }
}

// Sweep of n healthy runs that each take a moment (many measured steps on a small model).
fs::path slow_experiment(const TempDir& tmp, int n) {
  std::string seeds;
  for (int i = 0; i < n; ++i) seeds += (i ? ", " : "") + std::to_string(i);
  // 1 + 8 forward passes of 100 ms: about a second per run, plus the process start.
  return write_experiment(
      tmp, "resume", "  model: {plugin: fault, sleep_ms: 100}\n  steps: {warmup: 1, measure: 8}\n",
      "  seed: [" + seeds + "]\n");
}

// Polled while a sweep starts: the database file appears before the sweep's row does, so a
// sweep not registered yet counts as no runs rather than a failed REQUIRE.
int count_with_status(const fs::path& db, const std::string& status) {
  storage::Store store(db.string());
  const auto id = store.find_sweep("resume");
  if (!id) return 0;
  int n = 0;
  for (auto& r : store.runs(*id)) n += r.status == status;
  return n;
}

process::Child start_sweep(const fs::path& db, const fs::path& file, const fs::path& log) {
  process::ChildOptions o;
  o.argv = {ORCH_BINARY,           "--db",  db.string(),  "--plugin-path",
            ORCH_FAULT_PLUGIN_DIR, "sweep", file.string()};
  o.out = process::Stdio::file(log.string());
  o.err = process::Stdio::file(log.string() + ".err");
  return process::Child(o);
}

bool wait_for(const std::function<bool()>& cond, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST_CASE("sweep: kill -9 of the orchestrator, then resume: nothing lost, nothing twice",
          "[sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const auto file = slow_experiment(tmp, 6);
  std::map<std::string, std::string> finished_before;
  {
    auto sweep = start_sweep(db, file, tmp.path() / "first.log");
    REQUIRE(wait_for([&] { return fs::exists(db) && count_with_status(db, "ok") >= 2; }, 120));
    ::kill(sweep.pid(), SIGKILL);
    sweep.wait();
  }
  for (auto& [name, r] : runs_by_name(db, "resume")) {
    if (r.status == "ok") finished_before[name] = r.finished_at;
  }
  REQUIRE(finished_before.size() >= 2);
  CHECK(integrity(db) == "ok");
  // The run in flight was left `running`, its child killed with the orchestrator (PDEATHSIG).
  auto again = test::run_orch("--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR +
                              "' sweep '" + file.string() + "'");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(again.output.find(std::to_string(finished_before.size()) + " already finished") !=
        std::string::npos);
  auto after = runs_by_name(db, "resume");
  CHECK(after.size() == 6);  // one row per run: none duplicated
  for (auto& [name, r] : after) CHECK(r.status == "ok");
  for (auto& [name, finished_at] : finished_before) {
    CHECK(after[name].finished_at == finished_at);  // not run again
    CHECK(after[name].attempts == 1);
  }
  CHECK(integrity(db) == "ok");
}

TEST_CASE("sweep: SIGTERM stops cleanly, the run in flight is interrupted, resume finishes",
          "[sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const auto file = slow_experiment(tmp, 4);
  {
    auto sweep = start_sweep(db, file, tmp.path() / "first.log");
    REQUIRE(wait_for([&] { return fs::exists(db) && count_with_status(db, "ok") >= 1; }, 120));
    ::kill(sweep.pid(), SIGTERM);
    const auto st = sweep.wait();
    CHECK(st.exit_code == 3);
  }
  CHECK(count_with_status(db, "running") == 0);
  CHECK(count_with_status(db, "interrupted") + count_with_status(db, "ok") >= 1);
  auto again = test::run_orch("--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR +
                              "' sweep '" + file.string() + "'");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(count_with_status(db, "ok") == 4);
}

TEST_CASE("sweep: SIGHUP stops cleanly like SIGTERM: interrupted, exit 3, resume finishes",
          "[sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const auto file = slow_experiment(tmp, 4);
  {
    auto sweep = start_sweep(db, file, tmp.path() / "first.log");
    REQUIRE(wait_for([&] { return fs::exists(db) && count_with_status(db, "ok") >= 1; }, 120));
    ::kill(sweep.pid(), SIGHUP);
    const auto st = sweep.wait();
    CHECK(st.signal == 0);  // not killed by the hangup
    CHECK(st.exit_code == 3);
  }
  CHECK(count_with_status(db, "running") == 0);
  CHECK(count_with_status(db, "interrupted") + count_with_status(db, "ok") >= 1);
  auto again = test::run_orch("--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR +
                              "' sweep '" + file.string() + "'");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(count_with_status(db, "ok") == 4);
}

TEST_CASE("sweep: under nohup a hangup is ignored and the sweep runs to its end", "[sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const auto file = slow_experiment(tmp, 3);
  // nohup (coreutils) ignores SIGHUP and execs orch, which inherits the disposition. The
  // child is started without a PATH search, so nohup is looked up here.
  std::string nohup;
  for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
    if (fs::exists(fs::path(dir) / "nohup")) {
      nohup = (fs::path(dir) / "nohup").string();
      break;
    }
  }
  INFO("nohup (coreutils) in /usr/bin, /bin or /usr/local/bin");
  REQUIRE_FALSE(nohup.empty());
  process::ChildOptions o;
  o.argv = {nohup,           ORCH_BINARY,           "--db",  db.string(),
            "--plugin-path", ORCH_FAULT_PLUGIN_DIR, "sweep", file.string()};
  o.out = process::Stdio::file((tmp.path() / "nohup.log").string());
  o.err = process::Stdio::file((tmp.path() / "nohup.err").string());
  process::Child sweep(o);
  REQUIRE(wait_for([&] { return fs::exists(db) && count_with_status(db, "ok") >= 1; }, 120));
  ::kill(sweep.pid(), SIGHUP);
  const auto st = sweep.wait();
  CHECK(st.signal == 0);
  CHECK(st.exit_code == 0);
  CHECK(count_with_status(db, "ok") == 3);
  CHECK(count_with_status(db, "interrupted") == 0);
}

TEST_CASE("sweep: a closed output pipe stops the sweep cleanly, never kills it by SIGPIPE",
          "[sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const auto file = slow_experiment(tmp, 4);
  // `head -n 1` reads the first line and exits: the sweep's next progress line meets a pipe
  // without a reader. PIPESTATUS says how orch ended (141 would be death by SIGPIPE).
  const std::string cmd = std::string("bash -c \"'") + ORCH_BINARY + "' --db '" + db.string() +
                          "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR + "' sweep '" +
                          file.string() + "' 2>/dev/null | head -n 1 >/dev/null; " +
                          "echo rc=\\${PIPESTATUS[0]}\"";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[256];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  pclose(pipe);
  INFO(out);
  CHECK(out.find("rc=3") != std::string::npos);
  CHECK(count_with_status(db, "running") == 0);
  CHECK(count_with_status(db, "ok") < 4);  // it stopped, it did not run on blind
  CHECK(integrity(db) == "ok");
}

TEST_CASE("sweep: a database deleted during the sweep stops it with a clear message", "[sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const auto file = slow_experiment(tmp, 6);
  const fs::path log = tmp.path() / "first.log";
  auto sweep = start_sweep(db, file, log);
  REQUIRE(wait_for([&] { return fs::exists(db) && count_with_status(db, "ok") >= 1; }, 120));
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);
  const auto st = sweep.wait();
  std::ifstream err(log.string() + ".err");
  const std::string errors((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  INFO(errors);
  CHECK(st.exit_code == 4);  // an environment fault: nothing after the deletion was recorded
  CHECK(errors.find("r.db was deleted or moved away during the sweep") != std::string::npos);
  std::ifstream out(log);
  const std::string progress((std::istreambuf_iterator<char>(out)),
                             std::istreambuf_iterator<char>());
  CHECK(progress.find("[6/6]") == std::string::npos);  // it stopped, it did not run on blind
}

TEST_CASE("sweep: batch_size auto-largest finds the largest batch under a memory limit",
          "[sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // The fault model emulates a device holding 100 samples: larger batches fail to allocate.
  const auto file =
      write_experiment(tmp, "auto", "  model: {plugin: fault, max_batch: 100}\n  repeat: 2\n",
                       "  batch_size: [auto-largest]\n");
  auto r = test::run_orch("--db '" + db.string() + "' " + fault_plugin_path() + " sweep '" +
                          file.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto runs = runs_by_name(db, "auto");
  REQUIRE(runs.size() == 1);  // one configuration name, its repeats are rows of the same name
  storage::Store store(db.string());
  for (auto& rec : store.runs(*store.find_sweep("auto"))) {
    CHECK(rec.status == "ok");
    CHECK(rec.batch_size == 96);
    CHECK(rec.batch_auto);
  }
}

TEST_CASE("sweep: batch_size auto-largest treats an error above a batch that fitted as not fitting",
          "[sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // Like cuDNN near the memory limit: CUDNN_STATUS_INTERNAL_ERROR instead of OOM.
  const auto file = write_experiment(
      tmp, "auto", "  model: {plugin: fault, max_batch: 100, over_max_batch: error}\n",
      "  batch_size: [auto-largest]\n");
  auto r = test::run_orch("--db '" + db.string() + "' " + fault_plugin_path() + " sweep '" +
                          file.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  storage::Store store(db.string());
  auto runs = store.runs(*store.find_sweep("auto"));
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].batch_size == 96);
  storage::Statement st(
      store.database(),
      "SELECT json_extract(document_json, '$.batch_search.probes[1].note') FROM runs");
  REQUIRE(st.step());
  CHECK_THAT(st.column_text(0), Catch::Contains("CUDNN_STATUS_INTERNAL_ERROR"));
}

TEST_CASE("sweep: batch_size auto chooses the fastest batch and stores the probe curve",
          "[sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // The fault model's throughput peaks at batch 96: each forward pass sleeps 100 ms up to it
  // and 100 ms * (batch / 96)^1.75 above, so 256 is 41% slower than 128 (the first probe),
  // 192 26% slower, and the refinement's 96 (between 128 and half of it) 24% faster than 128,
  // the fastest of all.
  // The sleep dwarfs the step's own (single-threaded) work and the gaps dwarf the scheduling
  // delays of a machine busy with other tests, so load cannot reorder the probes.
  const auto file =
      write_experiment(tmp, "fast", "  model: {plugin: fault, sleep_ms: 100, knee_batch: 96}\n",
                       "  batch_size: [auto]\n");
  auto r = test::run_orch("--db '" + db.string() + "' " + fault_plugin_path() + " sweep '" +
                          file.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  storage::Store store(db.string());
  auto runs = store.runs(*store.find_sweep("fast"));
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "ok");
  CHECK(runs[0].batch_auto);
  CHECK(runs[0].batch_size == 96);

  storage::Statement st(store.database(),
                        "SELECT batch_size, images_per_s, outcome FROM batch_probes "
                        "WHERE run_id = ?1 ORDER BY seq");
  st.bind(1, runs[0].id);
  std::vector<std::int64_t> batches;
  std::map<std::int64_t, double> ips;
  while (st.step()) {
    batches.push_back(st.column_int(0));
    CHECK(st.column_text(2) == "ok");
    REQUIRE_FALSE(st.is_null(1));
    ips[st.column_int(0)] = st.column_double(1);
  }
  // Doubling from 128 until 256 is slower, then the midpoints above and below the best.
  const std::vector<std::int64_t> expected{128, 256, 192, 96};
  CHECK(batches == expected);
  for (const auto& [b, v] : ips) {
    if (b != 96) CHECK(v < ips[96]);
  }
  storage::Statement doc(store.database(),
                         "SELECT json_extract(document_json, '$.batch_search.mode'), "
                         "json_extract(document_json, '$.batch_search.chosen'), "
                         "json_extract(document_json, '$.batch_search.search_s') FROM runs");
  REQUIRE(doc.step());
  CHECK(doc.column_text(0) == "fastest");
  CHECK(doc.column_int(1) == 96);
  const double search_s = doc.column_double(2);
  CHECK(search_s > 0);

  // Each probe's wall time: every probe sleeps at least 100 ms a step, and together they make
  // up the search.
  storage::Statement per(store.database(),
                         "SELECT json_extract(value, '$.seconds') FROM runs, "
                         "json_each(json_extract(document_json, '$.batch_search.probes'))");
  double total = 0;
  int n = 0;
  while (per.step()) {
    REQUIRE_FALSE(per.is_null(0));
    CHECK(per.column_double(0) > 0.1);
    total += per.column_double(0);
    ++n;
  }
  CHECK(n == 4);
  CHECK(total <= search_s + 0.01);
}

}  // namespace
}  // namespace orch
