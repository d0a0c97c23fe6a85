// Finding a night's sweep: `orch sweeps` lists them, the latest (the one whose run started
// last) first, and rank shows that one; a resume with nothing to run changes neither; a
// finished sweep leaves no lock file; `--gpus none` runs on the CPU.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "integration/test_support.h"
#include "storage/store.h"

using namespace orch;
using Catch::Matchers::Contains;
using Catch::Matchers::Matches;
using Catch::Matchers::StartsWith;

namespace {

// No `device:`: `auto`, which `--gpus none` must turn into the CPU on a machine with GPUs too.
constexpr const char* kNight = R"(name: night
base:
  model: {plugin: resnet, depth: 18}
  data: {plugin: synthetic, image_size: 32, classes: 10, batches: 1}
  batch_size: 4
  steps: {warmup: 1, measure: 2}
matrix:
  memory_format: [contiguous, channels_last]
)";

std::vector<std::filesystem::path> lock_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".lock") out.push_back(e.path());
  }
  return out;
}

}  // namespace

TEST_CASE("orch sweeps lists the sweeps, the one whose run started last first", "[cli][sweeps]") {
  test::TempDir tmp;
  std::ofstream(tmp.path() / "night.yaml") << kNight;
  const std::string db = (tmp.path() / "r.db").string();
  const std::string sweep =
      "--db '" + db + "' sweep --gpus none '" + (tmp.path() / "night.yaml").string() + "'";

  auto monday = test::run_orch(sweep + " --sweep monday");
  INFO(monday.output);
  REQUIRE(monday.exit_code == 0);
  CHECK(lock_files(tmp.path()).empty());  // the lock went with the sweep
  for (const auto& r : test::runs_of(db, "monday")) CHECK(r.device == "cpu");

  auto tuesday = test::run_orch(sweep + " --sweep tuesday");
  INFO(tuesday.output);
  REQUIRE(tuesday.exit_code == 0);
  // Monday again: everything is done, so nothing starts, and Tuesday stays the latest.
  auto again = test::run_orch(sweep + " --sweep monday");
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.output, Contains("2 finished before"));
  CHECK(lock_files(tmp.path()).empty());

  auto list = test::run_orch("--db '" + db + "' sweeps");
  INFO(list.output);
  REQUIRE(list.exit_code == 0);
  CHECK_THAT(list.output,
             Matches("sweep +experiment +created +last run started +runs +ok +not ok +running "
                     "+revision\n"
                     "tuesday +night +[0-9T:Z-]+ +[0-9T:Z-]+ +2 +2 +0 +0 +1\n"
                     "monday +night +[0-9T:Z-]+ +[0-9T:Z-]+ +2 +2 +0 +0 +1\n"));

  auto rank = test::run_orch("--db '" + db + "' rank");
  INFO(rank.output);
  REQUIRE(rank.exit_code == 0);
  CHECK_THAT(rank.output, StartsWith("sweep tuesday (experiment night"));

  auto json = test::run_orch("--db '" + db + "' sweeps --json --experiment night");
  INFO(json.output);
  REQUIRE(json.exit_code == 0);
  const auto parsed = nlohmann::json::parse(json.output);
  REQUIRE(parsed.size() == 2);
  CHECK(parsed[0]["name"] == "tuesday");
  CHECK(parsed[1]["name"] == "monday");
  CHECK(parsed[1]["ok"] == 2);

  auto none = test::run_orch("--db '" + db + "' sweeps --experiment other");
  CHECK(none.exit_code == 0);
  CHECK_THAT(none.output, Contains("no sweeps of experiment other"));
}

TEST_CASE("orch sweeps without a database says so and creates none", "[cli][sweeps]") {
  test::TempDir tmp;
  const auto db = tmp.path() / "missing.db";
  auto r = test::run_orch("--db '" + db.string() + "' sweeps");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("no database at"));
  CHECK_FALSE(std::filesystem::exists(db));
}

TEST_CASE("orch sweep --gpus none refuses a configuration that needs a GPU, by name",
          "[cli][sweeps]") {
  test::TempDir tmp;
  std::ofstream(tmp.path() / "gpu.yaml") << std::string(kNight) + "  device: [cpu, cuda]\n";
  const auto db = tmp.path() / "r.db";
  auto r = test::run_orch("--db '" + db.string() + "' sweep --gpus none '" +
                          (tmp.path() / "gpu.yaml").string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("'cuda' needs a CUDA device, and none is visible"));
  CHECK_FALSE(std::filesystem::exists(db));
}
