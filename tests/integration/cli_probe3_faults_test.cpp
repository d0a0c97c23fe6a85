// What the second held-out probe of issue 39 left for a third: a profiled run's trace, written
// by the profiler itself, never through a link planted at its path and never over a file that
// is not a trace; `exec --trace` checked before the run, as --out is; the same sweep through a
// hard link to its database refused at once, not after waiting for the device its twin holds.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "integration/own_lock_folder.h"
#include "integration/test_support.h"
#include "plan/planner.h"
#include "plan/run_spec_json.h"
#include "runner/runner.h"
#include "storage/store.h"
#include "sweep/device_lock.h"
#include "sweep/sweep_lock.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

using test::kTiny;
using test::q;
using test::write;

// kTiny with two profiled steps after its measured ones.
std::string profiled_tiny() { return std::string(kTiny) + "  profile: {steps: 2}\n"; }

bool parses_as_trace(const fs::path& p) {
  try {
    return nlohmann::json::parse(test::slurp(p)).contains("traceEvents");
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

using test::OwnLockFolder;

}  // namespace

TEST_CASE("exec --trace is checked before the run: no link, database or other file replaced",
          "[cli][profile]") {
  test::TempDir tmp;
  const fs::path spec = tmp.path() / "spec.json", db = tmp.path() / "r.db";
  write(spec,
        run_spec_json(
            make_plan_from_string(profiled_tiny(), "tiny.yaml", test::built_plugins()).runs.at(0))
            .dump());
  {
    storage::Store store(db.string());  // an orch database, to be refused as a trace
  }
  const fs::path victim = tmp.path() / "victim", link = tmp.path() / "link.json",
                 notes = tmp.path() / "notes.txt", folder = tmp.path() / "folder";
  write(victim, "keep me");
  write(notes, "my notes\n");
  fs::create_symlink(victim, link);
  fs::create_directories(folder);
  const std::string db_before = test::slurp(db);
  const fs::path out = tmp.path() / "res.json";
  const std::string exec = "--db " + q(db) + " exec --spec " + q(spec) + " --out " + q(out);
  struct Case {
    fs::path trace;
    std::string why;
  };
  for (const auto& c : std::vector<Case>{
           {link, "it is a symbolic link"},
           {db, "it is the results database"},
           {notes, "is not an earlier profiler trace of orch"},
           {folder, "it is a folder"},
       }) {
    auto r = test::run_orch(exec + " --trace " + q(c.trace));
    INFO(c.trace << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains(c.trace.string()) && Contains(c.why));
    CHECK_FALSE(fs::exists(out));  // refused before the run: no result either
  }
  CHECK(test::slurp(victim) == "keep me");
  CHECK(test::slurp(notes) == "my notes\n");
  CHECK(test::slurp(db) == db_before);

  // The default, RESULT with the extension .trace.json, is checked the same way.
  const fs::path beside = tmp.path() / "res.trace.json";
  fs::create_symlink(victim, beside);
  auto d = test::run_orch(exec);
  INFO(d.output);
  CHECK(d.exit_code == 2);
  CHECK_THAT(d.output, Contains(beside.string()) && Contains("it is a symbolic link"));
  CHECK_FALSE(fs::exists(out));
  fs::remove(beside);

  // A run whose trace path is free writes it; run again, it replaces its own earlier trace.
  const fs::path trace = tmp.path() / "t.json";
  for (int i = 0; i < 2; ++i) {
    auto ok = test::run_orch(exec + " --trace " + q(trace));
    INFO(ok.output);
    REQUIRE(ok.exit_code == 0);
    CHECK(parses_as_trace(trace));
    const auto doc = nlohmann::json::parse(test::slurp(out));
    CHECK(doc["status"] == "ok");
    CHECK(doc["profile"]["trace"] == fs::absolute(trace).string());
  }
  // The profiler's private folder beside it is gone.
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    CHECK(e.path().filename().string().rfind(".orch-trace-", 0) == std::string::npos);
  }
}

TEST_CASE("the profiler replaces a link planted at its trace's path, never writing through it",
          "[runner][profile]") {
  // The sweep's run folder case: the path is orch's own, so no check stands before the run, and
  // a link put there meanwhile must not aim the profiler's write at its target.
  test::TempDir tmp;
  const fs::path victim = tmp.path() / "victim", trace = tmp.path() / "trace.json";
  write(victim, "keep me");
  fs::create_symlink(victim, trace);
  RunSpec spec = test::small_cpu_spec();
  spec.measure_steps = 2;
  spec.profile.steps = 1;
  RunOutputs outputs;
  outputs.trace_path = trace.string();
  const auto doc = run_one(spec, test::built_plugins(), outputs);
  INFO(doc.dump(1).substr(0, 3000));
  REQUIRE(doc["status"] == "ok");
  CHECK_FALSE(doc["profile"].contains("error"));
  CHECK(test::slurp(victim) == "keep me");
  CHECK_FALSE(fs::is_symlink(trace));
  CHECK(parses_as_trace(trace));

  // A FIFO at the path is refused (named in the profile's error), never opened or replaced.
  const fs::path fifo = tmp.path() / "fifo.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  outputs.trace_path = fifo.string();
  const auto refused = run_one(spec, test::built_plugins(), outputs);
  REQUIRE(refused["status"] == "ok");  // the measurement stands; only the trace is missing
  CHECK_THAT(refused["profile"]["error"].get<std::string>(),
             Contains(fifo.string()) && Contains("not a regular file"));
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("the same sweep through a hard link to its database is refused at once, not waited for",
          "[cli][sweep][device_lock]") {
  // Probe note: the device lock was taken before the database's own, so the twin waited for
  // the CPU its first sweep held, however long that sweep ran.
  test::TempDir tmp;
  const OwnLockFolder locks(tmp.path() / "locks");
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "r.db", twin = tmp.path() / "twin.db";
  { storage::Store store(db.string()); }
  fs::create_hard_link(db, twin);

  // The first sweep, as this process: the CPU's lock and the database file's, for sweep "tiny".
  std::atomic<bool> no_stop{false};
  std::ostringstream ignored;
  auto cpu = sweep::DeviceLocks::acquire({{"cpu", "the CPU"}}, "orch sweep 'tiny' (pid 1)",
                                         /*wait=*/false, ignored, no_stop);
  REQUIRE(cpu);
  sweep::SweepLock first(sweep::lock_path(db.string(), "tiny"));
  first.hold_database(db.string(), "tiny");

  const auto start = std::chrono::steady_clock::now();
  // Bounded by `timeout`: the old order waited for the CPU until killed (exit 124).
  auto r = test::run_command("timeout 60 '" + std::string(ORCH_BINARY) + "' --db " + q(twin) +
                             " sweep " + q(tmp.path() / "tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("already running on the same database file"));
  CHECK(r.output.find("waiting for") == std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  // Nothing of the twin's was recorded or created.
  CHECK_FALSE(storage::Store(db.string()).find_sweep("tiny").has_value());
  CHECK_FALSE(fs::exists(twin.string() + ".runs"));

  // Another sweep of the same file is not this one: it waits for the CPU, as any would
  // (--no-wait: exit 2 naming the holder, not "already running").
  write(tmp.path() / "other.yaml", std::string(kTiny).replace(6, 4, "other"));
  auto o = test::run_orch("--db " + q(twin) + " sweep --no-wait " + q(tmp.path() / "other.yaml"));
  INFO(o.output);
  CHECK(o.exit_code == 2);
  CHECK_THAT(o.output, Contains("orch sweep 'tiny' (pid 1)"));
  CHECK(o.output.find("already running") == std::string::npos);
}

TEST_CASE("exec --supervise refuses a link at its default work folder, RESULT.work", "[cli]") {
  test::TempDir tmp;
  const fs::path spec = tmp.path() / "spec.json", out = tmp.path() / "res.json";
  write(spec,
        run_spec_json(make_plan_from_string(kTiny, "tiny.yaml", test::built_plugins()).runs.at(0))
            .dump());
  const fs::path elsewhere = tmp.path() / "elsewhere";
  fs::create_directories(elsewhere);
  fs::create_directory_symlink(elsewhere, out.string() + ".work");
  auto r = test::run_orch("--db " + q(tmp.path() / "r.db") + " exec --supervise --spec " + q(spec) +
                          " --out " + q(out));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains(out.string() + ".work") && Contains("symbolic link"));
  CHECK(fs::is_empty(elsewhere));
  CHECK_FALSE(fs::exists(out));
}
