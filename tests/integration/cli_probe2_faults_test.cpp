// The third held-out probe of issue 39, as the orch binary meets it: files planted in the run
// folders and beside the database (links, FIFOs, devices, the database's own journal files)
// where orch writes or reads, outputs that are not orch's to replace, invisible characters in
// the HTML report, a full disk under `dataset make` and a new database, and paths given as
// --db that are not databases. Cases that need root (mounts) skip visibly without it.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "integration/test_support.h"
#include "plan/planner.h"
#include "plan/run_spec_json.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

constexpr const char* kTiny = R"(name: tiny
base:
  model: {plugin: resnet, depth: 18}
  data: {plugin: synthetic, image_size: 32, classes: 10, batches: 1}
  batch_size: 4
  steps: {warmup: 1, measure: 3}
  device: cpu
)";

// A script workload whose program is never reached in these tests (its files are refused
// first); it ends without a report if it is.
constexpr const char* kScriptExperiment = R"(name: s
base:
  workload: {kind: script, command: "s.py", python: /usr/bin/python3}
  device: cpu
  telemetry: {enabled: false}
  batch_size: 4
  steps: {warmup: 1, measure: 2}
)";

// The folder name of the plan's first run under DB.runs/<sweep>/: "<12 hex digits>-r0".
std::string first_run_folder(const fs::path& experiment) {
  auto plan = test::run_orch("plan " + q(experiment));
  std::smatch m;
  REQUIRE(std::regex_search(plan.output, m, std::regex(R"(\n0\s+\S+\s+([0-9a-f]{12}))")));
  return m[1].str() + "-r0";
}

}  // namespace

TEST_CASE("a script run never writes its specification through a link planted beside its result",
          "[cli][script]") {
  test::TempDir tmp;
  write(tmp.path() / "s.yaml", kScriptExperiment);
  write(tmp.path() / "s.py", "import sys\nsys.exit(0)\n");
  const fs::path victim = tmp.path() / "victim", db = tmp.path() / "r.db";
  write(victim, "keep me");
  const fs::path run_dir = db.string() + ".runs/s/" + first_run_folder(tmp.path() / "s.yaml");
  fs::create_directories(run_dir);
  const fs::path planted = run_dir / "result.json.script-spec.json";
  fs::create_symlink(victim, planted);

  auto r = test::run_orch("--db " + q(db) + " sweep " + q(tmp.path() / "s.yaml"));
  INFO(r.output);
  // The surroundings' fault, not the run's: the sweep stops, and runs it again once it is gone.
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains(planted.string()) && Contains("it is a symbolic link"));
  CHECK(test::slurp(victim) == "keep me");
  CHECK(fs::is_symlink(planted));
  const auto runs = test::runs_of(db, "s");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "interrupted");

  // `orch exec --out X` writes X.script-spec.json beside X: the same refusal, naming it.
  const fs::path out = tmp.path() / "sout.json", beside = tmp.path() / "sout.json.script-spec.json";
  fs::create_symlink(victim, beside);
  REQUIRE(fs::exists(run_dir / "spec.json"));  // the sweep's specification of the run
  auto e = test::run_orch("exec --spec " + q(run_dir / "spec.json") + " --out " + q(out));
  INFO(e.output);
  CHECK(test::slurp(victim) == "keep me");
  const auto doc = nlohmann::json::parse(test::slurp(out));
  CHECK(doc["status"] == "failed");
  CHECK(doc["failure_class"] == "environment");
  CHECK_THAT(doc["error"].get<std::string>(),
             Contains(beside.string()) && Contains("it is a symbolic link"));
  // A FIFO there is named too, never opened (a write to it would wait for a reader).
  fs::remove(beside);
  REQUIRE(::mkfifo(beside.c_str(), 0600) == 0);
  fs::remove(out);
  auto f = test::run_orch("exec --spec " + q(run_dir / "spec.json") + " --out " + q(out));
  INFO(f.output);
  CHECK_THAT(nlohmann::json::parse(test::slurp(out))["error"].get<std::string>(),
             Contains(beside.string()) && Contains("it is a FIFO"));
}
