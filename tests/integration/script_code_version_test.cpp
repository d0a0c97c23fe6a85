// A script run records the version of the user's own code (runner/code_version.h): the commit
// of the repository its script lives in, whether the tree differed from it, and a hash of the
// difference, so an edited module the script imports (the script's own bytes, and so the
// configuration's hash, unchanged) shows in `orch compare --sweeps`.
#include <catch2/catch.hpp>
#include <fstream>

#include "integration/test_support.h"
#include "runner/code_version.h"
#include "storage/store.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// A stand-in training script: imports a module of the same repository and reports two steps
// in the script protocol's format.
constexpr const char* kScript = R"PY(import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helper
batch = int(os.environ["ORCH_BATCH_SIZE"])
doc = {"format": "orch.script-report", "version": 1, "batch_size": batch, "device": "cpu",
       "metrics": {"images_per_s": 1000.0 * helper.SPEED, "step_ms_mean": 1.0,
                   "device_step_ms_mean": 1.0, "measure_s": 0.002, "warmup_s": 0.0,
                   "loss_first": 1.0, "loss_last": 1.0},
       "steps": [{"step": k, "step_ms": 1.0, "data_wait_ms": 0.0, "loss": 1.0} for k in range(2)],
       "environment": {}, "counters": {}}
path = os.environ["ORCH_SCRIPT_REPORT"]
with open(path + ".tmp", "w") as f:
    json.dump(doc, f)
os.rename(path + ".tmp", path)
)PY";

test::CommandResult git(const fs::path& repo, const std::string& args) {
  return test::run_command("git -C '" + repo.string() +
                           "' -c user.name=orch -c user.email=orch@example.invalid " + args);
}

using test::write;

}  // namespace

TEST_CASE("code version: commit, uncommitted changes and their hash, or null outside a repository",
          "[script][code_version]") {
  test::TempDir tmp;
  const fs::path repo = tmp.path() / "repo";
  fs::create_directories(repo / "sub");
  CHECK(code_version_of((repo / "sub").string()).is_null());  // not a repository yet
  REQUIRE(git(repo, "init -q").exit_code == 0);
  write(repo / "train.py", "print(1)\n");
  write(repo / "helper.py", "SPEED = 1\n");
  REQUIRE(git(repo, "add train.py helper.py").exit_code == 0);
  REQUIRE(git(repo, "commit -q -m first").exit_code == 0);
  const std::string head = git(repo, "rev-parse HEAD").output.substr(0, 40);

  const auto clean = code_version_of((repo / "train.py").string());
  INFO(clean.dump());
  CHECK(clean.at("commit") == head);
  CHECK(fs::equivalent(clean.at("repository").get<std::string>(), repo));
  CHECK(clean.at("dirty") == false);
  CHECK_FALSE(clean.contains("diff_hash"));

  write(repo / "helper.py", "SPEED = 2\n");  // an imported module edited, not committed
  const auto edited = code_version_of((repo / "train.py").string());
  CHECK(edited.at("commit") == head);
  CHECK(edited.at("dirty") == true);
  REQUIRE(edited.contains("diff_hash"));
  write(repo / "helper.py", "SPEED = 3\n");  // another edit: another hash
  const auto edited_again = code_version_of((repo / "train.py").string());
  CHECK(edited_again.at("diff_hash") != edited.at("diff_hash"));

  write(repo / "helper.py", "SPEED = 1\n");  // back to the commit, plus a new file
  write(repo / "new_module.py", "X = 1\n");
  const auto untracked = code_version_of((repo / "sub").string());
  CHECK(untracked.at("dirty") == true);
  CHECK(untracked.contains("diff_hash"));
}

TEST_CASE("code version: compare --sweeps names an edited module that the hash cannot see",
          "[script][code_version][sweep]") {
  test::TempDir tmp;
  const fs::path repo = tmp.path() / "repo";
  fs::create_directories(repo);
  write(repo / "train.py", kScript);
  write(repo / "helper.py", "SPEED = 1.0\n");
  write(repo / "exp.yaml",
        "name: exp\nbase:\n"
        "  workload: {kind: script, command: \"train.py\", python: /usr/bin/python3}\n"
        "  device: cpu\n  telemetry: {enabled: false}\n  batch_size: 2\n"
        "  steps: {warmup: 0, measure: 2}\n");
  REQUIRE(git(repo, "init -q").exit_code == 0);
  REQUIRE(git(repo, "add train.py helper.py exp.yaml").exit_code == 0);
  REQUIRE(git(repo, "commit -q -m first").exit_code == 0);
  const fs::path db = tmp.path() / "r.db";
  const std::string orch = "--db '" + db.string() + "' ";
  auto r = test::run_orch(orch + "sweep '" + (repo / "exp.yaml").string() + "' --sweep night-1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  write(repo / "helper.py", "SPEED = 0.5\n");  // the script's bytes and the plan unchanged
  r = test::run_orch(orch + "sweep '" + (repo / "exp.yaml").string() + "' --sweep night-2");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  {
    storage::Store store(db.string());
    const auto runs = store.runs(*store.find_sweep("night-2"));
    REQUIRE(runs.size() == 1);
    const auto& code = runs[0].environment.at("code");
    CHECK(code.at("dirty") == true);
    CHECK(code.at("commit") == git(repo, "rev-parse HEAD").output.substr(0, 40));
  }
  r = test::run_orch(orch + "compare --sweeps night-1 night-2");
  INFO(r.output);
  CHECK_THAT(r.output,
             Contains("your code's uncommitted changes") && Contains("no") && Contains("yes"));
}

}  // namespace orch
