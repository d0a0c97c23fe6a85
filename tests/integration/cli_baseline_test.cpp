// `baseline:` end to end on the CPU: orch sweep keeps it with the plan revision, orch rank's
// speed-up is against it, a misspelt one is refused before anything runs, and naming another is
// a plan change (--replan).
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "integration/test_support.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

fs::path write_experiment(const test::TempDir& tmp, const std::string& baseline) {
  const fs::path file = tmp.path() / "base.yaml";
  std::ofstream(file) << "name: base\nbase:\n  model: {plugin: fault}\n"
                      << "  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}\n"
                      << "  device: cpu\n  telemetry: {enabled: false}\n"
                      << "  steps: {warmup: 1, measure: 2}\nmatrix:\n  batch_size: [2, 4]\n"
                      << (baseline.empty() ? "" : "baseline: " + baseline + "\n");
  return file;
}

TEST_CASE("baseline: sweep keeps it, rank compares with it, a change is a new plan",
          "[cli][baseline]") {
  test::TempDir tmp;
  const std::string orch = "--db '" + (tmp.path() / "r.db").string() + "' --plugin-path '" +
                           ORCH_FAULT_PLUGIN_DIR + "' ";

  auto typo = test::run_orch(orch + "sweep '" + write_experiment(tmp, "b3").string() + "'");
  INFO(typo.output);
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.output, Contains("baseline") && Contains("'b3'") && Contains("b2, b4"));
  CHECK_FALSE(fs::exists(tmp.path() / "r.db"));

  auto night = test::run_orch(orch + "sweep '" + write_experiment(tmp, "b4").string() + "'");
  INFO(night.output);
  REQUIRE(night.exit_code == 0);
  auto rank = test::run_orch(orch + "rank");
  INFO(rank.output);
  CHECK(rank.exit_code == 0);
  CHECK(std::regex_search(rank.output, std::regex(R"(\n +[12]  b4 .* 1\.00x \(baseline\))")));
  CHECK_THAT(rank.output, Contains("speedup: against the baseline, b4"));

  auto moved = test::run_orch(orch + "sweep '" + write_experiment(tmp, "b2").string() + "'");
  INFO(moved.output);
  CHECK(moved.exit_code == 2);
  CHECK_THAT(moved.output, Contains("baseline: b4 -> b2") && Contains("--replan"));
  auto replan =
      test::run_orch(orch + "sweep --replan '" + write_experiment(tmp, "b2").string() + "'");
  INFO(replan.output);
  CHECK(replan.exit_code == 0);
  auto again = test::run_orch(orch + "rank");
  CHECK_THAT(again.output, Contains("speedup: against the baseline, b2"));

  auto none = test::run_orch(orch + "sweep --replan '" + write_experiment(tmp, "").string() + "'");
  CHECK(none.exit_code == 0);
  CHECK_THAT(test::run_orch(orch + "rank").output,
             Contains("speedup: against the slowest configuration"));
}

}  // namespace
}  // namespace orch
