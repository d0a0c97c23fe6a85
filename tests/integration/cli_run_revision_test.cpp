// `orch run` keeps one plan per sweep as `orch sweep` does: its first plan is recorded as the
// sweep's revision 1 (so rank, compare and the report show that plan's runs), a changed file
// stops before anything runs or is written, and --replan records it as revision 2.
#include <catch2/catch.hpp>
#include <fstream>

#include "integration/test_support.h"
#include "storage/store.h"
#include "storage/sweep_plans.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

fs::path write_experiment(const test::TempDir& tmp, const std::string& batches) {
  const fs::path file = tmp.path() / "direct.yaml";
  std::ofstream(file) << "name: direct\nbase:\n  model: {plugin: fault}\n"
                      << "  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}\n"
                      << "  device: cpu\n  telemetry: {enabled: false}\n"
                      << "  steps: {warmup: 1, measure: 2}\nmatrix:\n  batch_size: [" << batches
                      << "]\n";
  return file;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("orch run records its plan revision and refuses a changed plan without --replan",
          "[cli][plan_revision]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const std::string orch =
      "--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR + "' ";
  auto first = test::run_orch(orch + "run '" + write_experiment(tmp, "2, 4").string() + "'");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  {
    storage::Store store(db.string());
    const auto id = store.find_sweep("direct");
    REQUIRE(id);
    CHECK(storage::plan_revisions(store.database(), *id) == 1);
    CHECK(store.runs(*id).size() == 2);
  }

  auto same = test::run_orch(orch + "run '" + write_experiment(tmp, "2, 4").string() + "'");
  INFO(same.output);
  CHECK(same.exit_code == 0);  // the same plan: measured again under revision 1

  auto changed = test::run_orch(orch + "run '" + write_experiment(tmp, "2, 8").string() + "'");
  INFO(changed.output);
  CHECK(changed.exit_code == 2);
  CHECK_THAT(changed.output, Contains("orch run: ") && Contains("--replan"));
  {
    storage::Store store(db.string());
    // Running again replaced the same rows; the changed plan ran nothing.
    CHECK(store.runs(*store.find_sweep("direct")).size() == 2);
  }

  auto replanned =
      test::run_orch(orch + "run --replan '" + write_experiment(tmp, "2, 8").string() + "'");
  INFO(replanned.output);
  REQUIRE(replanned.exit_code == 0);
  CHECK_THAT(replanned.output, Contains("plan revision 2"));
  auto rank = test::run_orch(orch + "rank --sweep direct");
  INFO(rank.output);
  CHECK(rank.exit_code == 0);
  CHECK(count(rank.output, " b8 ") == 1);
  CHECK(count(rank.output, " b4 ") == 0);  // revision 1's configuration, not shown
  CHECK_THAT(rank.output, Contains("plan revision 2 of 2"));

  // Under another name, the changed file is a sweep of its own.
  auto named =
      test::run_orch(orch + "run --sweep other '" + write_experiment(tmp, "4").string() + "'");
  INFO(named.output);
  CHECK(named.exit_code == 0);
  storage::Store store(db.string());
  const auto other = store.find_sweep("other");
  REQUIRE(other);
  CHECK(store.runs(*other).size() == 1);
  CHECK(storage::plan_revisions(store.database(), *other) == 1);
}

}  // namespace
}  // namespace orch
