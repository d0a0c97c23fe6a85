// The sweep notices a database deleted or replaced under it before recording into it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "sweep/watched_recorder.h"
#include "unit/plan_test_catalog.h"

namespace orch::sweep {
namespace {

namespace fs = std::filesystem;

struct CountingRecorder final : Recorder {
  int writes = 0;
  std::map<std::pair<std::string, int>, PriorRun> prior_runs() override { return {}; }
  std::optional<double> measured_duration_s(const RunSpec&) override { return std::nullopt; }
  std::int64_t begin(const RunSpec&, const std::string&) override { return ++writes; }
  void heartbeat(std::int64_t) override { ++writes; }
  void finish(std::int64_t, const nlohmann::json&) override { ++writes; }
  void mark_stale(const RunSpec&, const std::string&) override { ++writes; }
};

TEST_CASE("watched recorder: a deleted or replaced database stops recording", "[sweep]") {
  const fs::path dir = fs::temp_directory_path() / ("orch-watch-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path db = dir / "r.db";
  std::ofstream(db) << "x";
  const Plan p = test::plan_text("name: x\n");
  CountingRecorder inner;
  WatchedRecorder watched(inner, db.string());
  CHECK(watched.begin(p.runs[0], "") == 1);
  watched.heartbeat(1);
  CHECK(inner.writes == 2);

  SECTION("deleted") {
    fs::remove(db);
    CHECK_THROWS_WITH(watched.finish(1, nlohmann::json::object()),
                      Catch::Contains("r.db was deleted or moved away during the sweep"));
  }
  SECTION("replaced by another file (a copy renamed over it)") {
    std::ofstream(dir / "copy.db") << "x";
    fs::rename(dir / "copy.db", db);
    CHECK_THROWS_AS(watched.heartbeat(1), DatabaseGone);
    CHECK_THROWS_WITH(watched.begin(p.runs[0], ""), Catch::Contains("replaced by another file"));
  }
  CHECK(inner.writes == 2);  // nothing reached the recorder after the change
  fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::sweep
