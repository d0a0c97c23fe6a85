// Nights with `orch sweep` for real on the CPU: a changed file does not run beside the old plan
// (exit 2, or --replan for a new revision that the read commands then show), a {date} sweep
// name makes one sweep per night, and `orch compare --sweeps` judges night against night.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <regex>

#include "integration/test_support.h"
#include "storage/store.h"
#include "storage/sweep_plans.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using test::TempDir;

fs::path write_night(const TempDir& tmp, int measure, int repeat = 1) {
  const fs::path file = tmp.path() / "night.yaml";
  std::ofstream(file) << "name: night\nbase:\n  model: {plugin: fault}\n"
                      << "  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}\n"
                      << "  device: cpu\n  telemetry: {enabled: false}\n"
                      << "  steps: {warmup: 1, measure: " << measure << "}\n"
                      << "  repeat: " << repeat << "\nmatrix:\n  batch_size: [2, 4]\n";
  return file;
}

std::string orch_at(const fs::path& db) {
  return "--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR + "' ";
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("sweep: a changed plan stops with exit 2; --replan records a revision",
          "[sweep][nights]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  auto first = test::run_orch(orch_at(db) + "sweep '" + write_night(tmp, 3).string() + "'");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);

  const fs::path changed = write_night(tmp, 4);
  auto refused = test::run_orch(orch_at(db) + "sweep '" + changed.string() + "'");
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("differs from the plan sweep 'night' runs (revision 1") &&
                                 Contains("steps: measure 3, warmup 1 -> measure 4, warmup 1") &&
                                 Contains("--sweep NEW-NAME") && Contains("--replan"));
  {
    storage::Store store(db.string());
    CHECK(store.runs(*store.find_sweep("night")).size() == 2);  // nothing ran
  }

  auto replanned = test::run_orch(orch_at(db) + "sweep --replan '" + changed.string() + "'");
  INFO(replanned.output);
  REQUIRE(replanned.exit_code == 0);
  CHECK_THAT(replanned.output, Contains("plan revision 2"));

  // The latest revision by default: each name once, and the note says why runs are hidden.
  auto rank = test::run_orch(orch_at(db) + "rank --sweep night");
  INFO(rank.output);
  CHECK(rank.exit_code == 0);
  CHECK(count(rank.output, " b2 ") == 1);
  CHECK(count(rank.output, " b4 ") == 1);
  CHECK_THAT(rank.output,
             Contains("plan revision 2 of 2") && Contains("2 runs of other revisions not shown"));
  auto old = test::run_orch(orch_at(db) + "rank --sweep night --revision 1");
  INFO(old.output);
  CHECK(old.exit_code == 0);
  CHECK_THAT(old.output, Contains("plan revision 1 of 2"));
  auto bad = test::run_orch(orch_at(db) + "rank --sweep night --revision 3");
  CHECK(bad.exit_code == 2);

  auto exported = test::run_orch(orch_at(db) + "export --format json --sweep night");
  INFO(exported.output);
  CHECK(exported.exit_code == 0);
  CHECK(count(exported.output, "\"name\": \"b2\"") + count(exported.output, "\"name\":\"b2\"") ==
        1);

  // Resuming the new revision is not a change.
  auto again = test::run_orch(orch_at(db) + "sweep '" + changed.string() + "'");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.output, Contains("2 finished before"));
}

TEST_CASE("sweep: {date} names one sweep per night; compare --sweeps judges two nights",
          "[sweep][nights]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const fs::path file = write_night(tmp, 3, 2);
  auto typo = test::run_orch(orch_at(db) + "sweep --sweep 'n-{data}' '" + file.string() + "'");
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.output, Contains("unknown placeholder {data}"));

  auto night = test::run_orch(orch_at(db) + "sweep --sweep 'n-{date}' '" + file.string() + "'");
  INFO(night.output);
  REQUIRE(night.exit_code == 0);
  char today[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(today, sizeof today, "%Y-%m-%d", std::localtime(&now));
  const std::string name = std::string("n-") + today;
  CHECK_THAT(night.output, Contains("sweep " + name));

  auto other = test::run_orch(orch_at(db) + "sweep --sweep other '" + file.string() + "'");
  REQUIRE(other.exit_code == 0);
  auto cmp = test::run_orch(orch_at(db) + "compare --sweeps '" + name + "' other");
  INFO(cmp.output);
  CHECK(cmp.exit_code == 0);
  CHECK_THAT(cmp.output, Contains("environment: the same in all") && Contains("Welch's t-test") &&
                             Contains("95%"));
  CHECK(std::regex_search(
      cmp.output,
      std::regex(
          R"(b2 +[0-9.]+ ± [0-9.]+ +2 +[0-9.]+ ± [0-9.]+ +2 +[-+][0-9.]+% +(faster|slower|inconclusive \(n=2\)))")));
  auto missing = test::run_orch(orch_at(db) + "compare --sweeps other");
  CHECK(missing.exit_code != 0);
}

TEST_CASE("sweep: the doctor's warnings that change numbers come first and are stored",
          "[sweep][nights]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  ::setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
  auto r = test::run_orch(orch_at(db) + "sweep '" + write_night(tmp, 3).string() + "'");
  ::unsetenv("CUDA_LAUNCH_BLOCKING");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto warned = r.output.find("error launch_blocking: CUDA_LAUNCH_BLOCKING=1");
  const auto first_run = r.output.find("start ");
  REQUIRE(warned != std::string::npos);
  CHECK(warned < first_run);
  storage::Store store(db.string());
  const auto plan = storage::latest_plan(store.database(), *store.find_sweep("night"));
  REQUIRE(plan);
  REQUIRE(plan->warnings.size() == 1);
  CHECK_THAT(plan->warnings[0], Contains("CUDA_LAUNCH_BLOCKING=1"));
}

}  // namespace
}  // namespace orch
