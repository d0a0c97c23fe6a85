// The submission folder: one spec per run not finished yet, the index, the script; resume.
#include <catch2/catch.hpp>

#include "cluster/submission.h"
#include "plan/run_spec_json.h"
#include "unit/cluster_test_support.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

std::vector<RunSpec> four_runs() {
  return {test::cluster_spec("a", "aaaa", 0), test::cluster_spec("a", "aaaa", 1),
          test::cluster_spec("b", "bbbb", 0), test::cluster_spec("c", "cccc", 0)};
}

cluster::SlurmScriptInput script_input(const fs::path& dir) {
  cluster::SlurmScriptInput in;
  in.sweep = "s";
  in.orch_binary = "/bin/orch";
  in.dir = dir.string();
  return in;
}

TEST_CASE("cluster: finished runs are not submitted again", "[cluster]") {
  const auto runs = four_runs();
  std::map<std::pair<std::string, int>, std::string> done = {
      {{"aaaa", 0}, "ok"}, {{"aaaa", 1}, "interrupted"}, {{"bbbb", 0}, "oom"}};
  auto pending = cluster::pending_runs(runs, done, /*retry_failed=*/false);
  REQUIRE(pending.size() == 2);
  CHECK(pending[0]->hash == "aaaa");
  CHECK(pending[0]->repeat == 1);
  CHECK(pending[1]->hash == "cccc");
  pending = cluster::pending_runs(runs, done, /*retry_failed=*/true);
  CHECK(pending.size() == 3);  // the oom run too
  CHECK(cluster::pending_runs(runs, {}, false).size() == 4);
}

TEST_CASE("cluster: the submission folder holds one spec per task, the index and the script",
          "[cluster]") {
  test::TempFolder tmp;
  const auto runs = four_runs();
  std::vector<const RunSpec*> pending = {&runs[1], &runs[3]};
  const fs::path dir = tmp.path / "sub";
  auto sub =
      cluster::write_submission({"s", "exp", "/x/exp.yaml", "d"}, pending, 4, script_input(dir));
  CHECK(sub.already_done == 2);
  CHECK(sub.result_names == std::vector<std::string>{"aaaa-r1", "cccc-r0"});
  // specs/i.json is task i's run, readable back as the RunSpec.
  auto spec0 = nlohmann::json::parse(test::read_text(dir / "specs" / "0.json"));
  CHECK(spec0 == run_spec_json(runs[1]));
  auto spec1 = nlohmann::json::parse(test::read_text(dir / "specs" / "1.json"));
  CHECK(spec1["run"]["hash"] == "cccc");
  CHECK_FALSE(fs::exists(dir / "specs" / "2.json"));
  auto index = cluster::read_index(dir.string());
  REQUIRE(index.has_value());
  CHECK((*index)["sweep"] == "s");
  CHECK((*index)["experiment"] == "exp");
  CHECK((*index)["experiment_file"] == "/x/exp.yaml");
  REQUIRE((*index)["tasks"].size() == 2);
  CHECK((*index)["tasks"][1]["result"] == "results/cccc-r0.json");
  const std::string script = test::read_text(sub.script_path);
  CHECK(script == sub.script);
  CHECK(script.find("#SBATCH --array=0-1\n") != std::string::npos);
  CHECK(fs::is_directory(dir / "results"));

  SECTION("a later submission replaces the specs of the earlier one") {
    std::vector<const RunSpec*> one = {&runs[3]};
    cluster::write_submission({"s", "exp", "", ""}, one, 4, script_input(dir));
    CHECK(fs::exists(dir / "specs" / "0.json"));
    CHECK_FALSE(fs::exists(dir / "specs" / "1.json"));
    CHECK(cluster::read_index(dir.string()).value()["tasks"].size() == 1);
  }
  SECTION("nothing pending writes nothing") {
    test::TempFolder other;
    auto none =
        cluster::write_submission({"s", "exp", "", ""}, {}, 4, script_input(other.path / "x"));
    CHECK(none.script.empty());
    CHECK(none.already_done == 4);
    CHECK_FALSE(fs::exists(other.path / "x"));
  }
}

}  // namespace
}  // namespace orch
