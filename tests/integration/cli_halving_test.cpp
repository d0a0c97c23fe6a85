// `search: halving` end to end on the CPU: configurations whose speed differs by design (the
// fault model sleeps `sleep_ms` in each forward pass) go through orch plan, orch sweep and
// orch rank. The slow ones are recorded pruned with their rung and their short measurement, the
// survivors get the full one, rank lists the pruned below its ranking, and a sweep that lost
// its later rungs resumes at the rung it reached without measuring earlier rungs again.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "integration/test_support.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// Six configurations, each about three times slower than the one before (knee_batch above the
// batch: a constant sleep, computed on one thread, steady on a loaded machine); 2 repeats of 8
// steps in full. eta 2: 6 -> 3 -> 2 configurations; rung 0 measures 2 steps, rung 1 4 steps.
fs::path write_experiment(const test::TempDir& tmp) {
  const fs::path file = tmp.path() / "halving.yaml";
  std::ofstream(file) << "name: halving\nbase:\n  model: {plugin: fault, knee_batch: 64}\n"
                      << "  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}\n"
                      << "  device: cpu\n  telemetry: {enabled: false}\n  batch_size: 2\n"
                      << "  repeat: 2\n  steps: {warmup: 2, measure: 8}\n"
                      << "matrix:\n  model.sleep_ms: [1, 3, 9, 27, 81, 160]\n"
                      << "search: {method: halving, eta: 2, min_steps: 2}\n";
  return file;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("halving: slow configurations pruned at their rung, the fast ones measured in full",
          "[cli][halving]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const std::string orch =
      "--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR + "' ";
  const std::string file = "'" + write_experiment(tmp).string() + "'";

  auto plan = test::run_orch(orch + "plan " + file);
  INFO(plan.output);
  REQUIRE(plan.exit_code == 0);
  CHECK_THAT(plan.output,
             Contains("rung 0: 6 configurations x 2 measured steps x 1 repeat, keep 3"));
  CHECK_THAT(plan.output, Contains("rung 2: 2 configurations x 8 measured steps x 2 repeats"));

  auto night = test::run_orch(orch + "sweep --gpus none " + file);
  INFO(night.output);
  REQUIRE(night.exit_code == 0);
  CHECK(count(night.output, "  start ") == 6 + 3 + 4);

  const auto runs = test::runs_of(db, "halving");
  std::map<std::string, std::string> pruned_at;  // name -> "rung k"
  int full = 0;
  for (const auto& r : runs) {
    INFO(r.name << " " << r.status << " rung " << r.rung.value_or(-1));
    if (r.status == "pruned") {
      REQUIRE(r.rung);
      pruned_at[r.name] = "rung " + std::to_string(*r.rung);
      CHECK(r.config["steps"]["measure"] == (*r.rung == 0 ? 2 : 4));
      CHECK(r.metric("images_per_s").has_value());  // its short measurement is kept
    } else {
      CHECK(r.status == "ok");
      if (!r.rung) {
        ++full;
        CHECK(r.config["steps"]["measure"] == 8);
        CHECK_FALSE(r.config.contains("search"));  // the grid's run of that configuration
      }
    }
  }
  CHECK(full == 4);
  REQUIRE(pruned_at.size() == 4);
  std::set<std::string> at0, at1;
  for (const auto& [name, where] : pruned_at) (where == "rung 0" ? at0 : at1).insert(name);
  CHECK(at0.size() == 3);
  CHECK(at1.size() == 1);
  for (const auto& name : at0)
    CHECK_THAT(name, Contains("27") || Contains("81") || Contains("160"));
  for (const auto& name : at1) CHECK_THAT(name, Contains("9"));

  auto rank = test::run_orch(orch + "rank");
  INFO(rank.output);
  CHECK(rank.exit_code == 0);
  CHECK_THAT(rank.output, Contains("2 configurations from 4 successful runs"));
  // The two survivors are the ranking, in whatever order the machine's noise gives them: at
  // n = 2 a 95% interval is 12.7 standard errors wide, so on a loaded machine the faster one is
  // often NOISY and, by rank's rule, cannot rank above the steady one it overlaps.
  CHECK(std::regex_search(rank.output, std::regex(R"(\n +[12]  \S*sleep_ms=1\b)")));
  CHECK(std::regex_search(rank.output, std::regex(R"(\n +[12]  \S*sleep_ms=3\b)")));
  CHECK(std::regex_search(rank.output,
                          std::regex(R"(pruned at rung 1: [0-9.]+ img/s over 4 steps)")));
  CHECK(count(rank.output, "pruned at rung 0: ") == 3);
  // Below the ranking.
  CHECK(rank.output.find("pruned at rung") > rank.output.find("successful runs"));

  // Running it again measures nothing again.
  auto again = test::run_orch(orch + "sweep --gpus none " + file);
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(count(again.output, "  start ") == 0);
}

TEST_CASE("halving: a sweep that lost its last rungs resumes at the rung it reached",
          "[cli][halving]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const std::string orch =
      "--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR + "' ";
  const std::string file = "'" + write_experiment(tmp).string() + "'";
  REQUIRE(test::run_orch(orch + "sweep --gpus none " + file).exit_code == 0);
  // As if the night had ended after rung 0's cut: rung 1 and the last rung unrecorded.
  {
    storage::Store store(db.string());
    store.database().exec("DELETE FROM runs WHERE rung IS NULL OR rung = 1");
  }
  auto cut = test::run_orch(orch + "rank");
  INFO(cut.output);
  CHECK_THAT(cut.output,
             Contains("the sweep has reached rung 0 so far; the ranking comes from rung 2"));
  CHECK(count(cut.output, "pruned at rung 0: ") == 3);

  auto resumed = test::run_orch(orch + "sweep --gpus none " + file);
  INFO(resumed.output);
  CHECK(resumed.exit_code == 0);
  // Rung 0 is read back, not measured again: rung 1's three runs and the last rung's four.
  CHECK(count(resumed.output, "  start ") == 3 + 4);
  CHECK_THAT(resumed.output, Contains("rung 0 kept 3 of 6"));
  const auto runs = test::runs_of(db, "halving");
  CHECK(std::count_if(runs.begin(), runs.end(),
                      [](const storage::RunRecord& r) { return r.status == "pruned"; }) == 4);
}

}  // namespace
}  // namespace orch
