// `orch sweep` for real on the CPU, on whose fault a run fails: configuration errors never
// retire the device; device failures (a crash, a sticky CUDA error) lead to a health check in a
// fresh process, which decides; an environment fault (a full disk, a database locked by
// another program) stops the sweep with exit 4, spoils nothing, and the same command finishes
// the plan once the fault is gone.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "integration/test_support.h"
#include "process/child.h"
#include "storage/store.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// A CPU sweep of the fault model: `model_line` replaces the model, `matrix` goes under `matrix:`.
fs::path experiment(const TempDir& tmp, const std::string& name, const std::string& model_line,
                    const std::string& steps, const std::string& matrix) {
  const fs::path file = tmp.path() / (name + ".yaml");
  std::ofstream out(file);
  out << "name: " << name << "\nbase:\n"
      << "  model: " << model_line << "\n"
      << "  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}\n"
      << "  batch_size: 4\n  device: cpu\n  telemetry: {enabled: false}\n"
      << "  steps: " << steps << "\n"
      << "matrix:\n"
      << matrix;
  return file;
}

std::string orch_args(const fs::path& db) {
  return "--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR + "' ";
}

std::string mode_of(const storage::RunRecord& r) {
  return r.config["model"]["params"]["mode"].get<std::string>();
}

struct Check {
  std::string gpu;
  bool healthy;
  std::string detail;
};

std::vector<Check> device_checks(const fs::path& db) {
  storage::Store store(db.string());
  storage::Statement st(store.database(),
                        "SELECT gpu, healthy, COALESCE(detail, '') FROM device_checks ORDER BY "
                        "rowid");
  std::vector<Check> out;
  while (st.step()) out.push_back({st.column_text(0), st.column_int(1) == 1, st.column_text(2)});
  return out;
}

// The 12-hex-digit hash prefixes of a plan's runs, in plan order, from `orch plan`'s table:
// the run folders are named after them.
std::vector<std::string> plan_hashes(const fs::path& file) {
  auto r = test::run_orch("--plugin-path '" + std::string(ORCH_FAULT_PLUGIN_DIR) + "' plan '" +
                          file.string() + "'");
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> out;
  const std::regex row(R"(^\d+\s+\S+\s+([0-9a-f]{12})\s)");
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) out.push_back(m[1]);
  }
  return out;
}

// The orch binary with `args`, its environment extended by `env` (VAR=value, shell-quoted).
test::CommandResult run_with_env(const std::string& env, const std::string& args) {
  const std::string cmd = env + " '" + ORCH_BINARY + "' " + args + " 2>&1";
  test::CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool wait_for(const std::function<bool()>& cond, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST_CASE("sweep: five configuration failures in a row retire nothing; every good run is ok",
          "[sweep][failure_class]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // Mode-major order: five exceptions (one per forward pass 1..5 of 5), then five good runs.
  const auto file = experiment(tmp, "config-errors", "{plugin: fault}", "{warmup: 1, measure: 4}",
                               "  model.mode: [throw, none]\n  model.at_step: [1, 2, 3, 4, 5]\n");
  auto r =
      test::run_orch(orch_args(db) + "sweep --max-consecutive-failures 3 '" + file.string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("no longer using") == std::string::npos);
  CHECK(r.output.find("checking its health") == std::string::npos);
  const auto runs = test::runs_of(db, "config-errors");
  REQUIRE(runs.size() == 10);
  int failed = 0, ok = 0;
  for (const auto& run : runs) {
    INFO(run.name << ": " << run.status << " " << run.error);
    if (mode_of(run) == "throw") {
      CHECK(run.status == "failed");
      CHECK(run.failure_class == "configuration");
      ++failed;
    } else {
      CHECK(run.status == "ok");
      CHECK(run.failure_class.empty());
      ++ok;
    }
  }
  CHECK(failed == 5);
  CHECK(ok == 5);
  CHECK(device_checks(db).empty());
}

TEST_CASE(
    "sweep: repeated device failures lead to a health check; a failed check retires the "
    "device",
    "[sweep][failure_class]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // Two crashes (SIGSEGV), two sticky CUDA errors (as LibTorch reports them), two good runs.
  const auto file =
      experiment(tmp, "device-errors", "{plugin: fault}", "{warmup: 1, measure: 3}",
                 "  model.mode: [segfault, cuda_error, none]\n  model.at_step: [1, 2]\n");

  SECTION("the check fails: the device is retired after the second crash, the rest skipped") {
    auto r =
        run_with_env("ORCH_TEST_HEALTH_CHECK=fail",
                     orch_args(db) + "sweep --max-consecutive-failures 2 '" + file.string() + "'");
    const std::string& output = r.output;
    INFO(output);
    CHECK(r.exit_code == 1);
    CHECK(output.find("health check of cpu: unhealthy") != std::string::npos);
    CHECK(output.find("no longer using cpu: 2 consecutive runs failed on it with device errors, "
                      "and its health check failed") != std::string::npos);
    const auto checks = device_checks(db);
    REQUIRE(checks.size() == 1);
    CHECK(checks[0].gpu.empty());
    CHECK_FALSE(checks[0].healthy);
    CHECK(checks[0].detail.find("forced by ORCH_TEST_HEALTH_CHECK") != std::string::npos);
    int skipped = 0;
    for (const auto& run : test::runs_of(db, "device-errors")) {
      INFO(run.name << ": " << run.status << " " << run.error);
      if (mode_of(run) == "segfault") {
        CHECK(run.status == "failed");
        CHECK(run.failure_class == "device");
      } else {
        CHECK(run.status == "skipped");
        ++skipped;
      }
    }
    CHECK(skipped == 4);
  }

  SECTION("the check passes: the device stays in use and every good run is ok") {
    auto r = test::run_orch(orch_args(db) + "sweep --max-consecutive-failures 2 '" + file.string() +
                            "'");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("no longer using") == std::string::npos);
    // One check after the crashes, one after the sticky CUDA errors: both pass on the CPU.
    const auto checks = device_checks(db);
    REQUIRE(checks.size() == 2);
    for (const auto& c : checks) {
      CHECK(c.healthy);
      CHECK(c.detail.find("cpu works") != std::string::npos);
    }
    for (const auto& run : test::runs_of(db, "device-errors")) {
      INFO(run.name << ": " << run.status << " " << run.error);
      if (mode_of(run) == "none") {
        CHECK(run.status == "ok");
      } else {
        CHECK(run.status == "failed");
        CHECK(run.failure_class == "device");
      }
    }
  }
}

TEST_CASE(
    "sweep: a full disk stops the sweep with exit 4, naming the path; the same command "
    "then finishes",
    "[sweep][environment]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const auto file = experiment(tmp, "disk-full", "{plugin: fault}", "{warmup: 1, measure: 2}",
                               "  seed: [1, 2, 3, 4]\n");
  const auto hashes = plan_hashes(file);
  REQUIRE(hashes.size() == 4);
  // The second run's file fails as on a full disk: the parent's spec.json, or the result
  // document its own process writes.
  const std::string target = GENERATE(std::string("/spec.json"), std::string("/result.json"));
  INFO("failing " << target);
  const std::string fault = hashes[1] + "-r0" + target;
  auto r = run_with_env("ORCH_TEST_FAIL_WRITE='" + fault + "'",
                        orch_args(db) + "sweep '" + file.string() + "'");
  const std::string& output = r.output;
  INFO(output);
  CHECK(r.exit_code == 4);
  CHECK(output.find("no space left on ") != std::string::npos);
  CHECK(output.find(fault) != std::string::npos);
  CHECK(output.find("ENOSPC") != std::string::npos);
  CHECK(output.find("free space and run the same command again") != std::string::npos);
  CHECK(output.find("warning") == std::string::npos);
  {
    const auto runs = test::runs_of(db, "disk-full");
    REQUIRE(runs.size() == 2);  // the plan was not burnt through: runs 3 and 4 never started
    for (const auto& run : runs) {
      INFO(run.name << ": " << run.status << " " << run.error);
      if (run.config_hash.rfind(hashes[0], 0) == 0) {
        CHECK(run.status == "ok");
      } else {
        CHECK(run.status == "interrupted");  // spoiled, so a plain resume runs it again
        CHECK(run.failure_class == "environment");
      }
    }
  }
  auto again = test::run_orch(orch_args(db) + "sweep '" + file.string() + "'");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(again.output.find("1 already finished, 3 to run") != std::string::npos);
  const auto runs = test::runs_of(db, "disk-full");
  REQUIRE(runs.size() == 4);
  for (const auto& run : runs) {
    CHECK(run.status == "ok");
    CHECK(run.failure_class.empty());
  }
}

TEST_CASE(
    "sweep: a database locked by another program past the busy timeout stops the sweep "
    "with exit 4; the next resume records the finished result",
    "[sweep][environment]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // Runs of about two seconds: the lock is taken while the first one runs.
  const auto file = experiment(tmp, "locked", "{plugin: fault, sleep_ms: 200}",
                               "{warmup: 1, measure: 8}", "  seed: [1, 2, 3]\n");
  const auto hashes = plan_hashes(file);
  REQUIRE(hashes.size() == 3);
  process::ChildOptions o;
  o.argv = {ORCH_BINARY,           "--db",  db.string(),  "--plugin-path",
            ORCH_FAULT_PLUGIN_DIR, "sweep", file.string()};
  o.env["ORCH_BUSY_TIMEOUT_MS"] = "500";
  o.out = process::Stdio::file((tmp.path() / "sweep.out").string());
  o.err = process::Stdio::file((tmp.path() / "sweep.err").string());
  process::Child sweep(o);
  auto running = [&] {
    if (!fs::exists(db)) return false;
    storage::Store store(db.string());
    auto id = store.find_sweep("locked");
    if (!id) return false;
    for (const auto& r : store.runs(*id)) {
      if (r.status == "running") return true;
    }
    return false;
  };
  REQUIRE(wait_for(running, 120));
  storage::Database other(db.string());
  sqlite3_busy_timeout(other.get(), 30000);
  other.exec("BEGIN IMMEDIATE");  // another program's write lock, held until the sweep stops
  process::ExitStatus st;
  REQUIRE(wait_for(
      [&] {
        auto s = sweep.poll();
        if (s) st = *s;
        return s.has_value();
      },
      120));
  other.exec("ROLLBACK");
  const std::string output = test::slurp(o.out.path) + test::slurp(o.err.path);
  INFO(output);
  CHECK(st.exit_code == 4);
  CHECK(output.find("database is locked by another process: ") != std::string::npos);
  CHECK(output.find("(held longer than 500 ms)") != std::string::npos);
  CHECK(output.find("warning") == std::string::npos);
  // The first run finished: its complete result waits on disk.
  const fs::path result =
      fs::path(db.string() + ".runs") / "locked" / (hashes[0] + "-r0") / "result.json";
  REQUIRE(fs::exists(result));
  CHECK(test::slurp(result).find("\"status\": \"ok\"") != std::string::npos);

  auto again = test::run_orch(orch_args(db) + "sweep '" + file.string() + "'");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(again.output.find("its result was complete on disk") != std::string::npos);
  const auto runs = test::runs_of(db, "locked");
  REQUIRE(runs.size() == 3);
  for (const auto& run : runs) {
    CHECK(run.status == "ok");
    if (run.config_hash.rfind(hashes[0], 0) == 0) CHECK(run.attempts == 1);  // not run again
  }
}

}  // namespace
}  // namespace orch
