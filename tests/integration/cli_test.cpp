// The orch binary end to end: a run lands in SQLite and in the ranking; bad input is refused
// before anything runs or any database file is created; refused plugins are reported.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "integration/test_support.h"
#include "storage/store.h"

using namespace orch;
using Catch::Matchers::Contains;
using Catch::Matchers::Matches;

namespace {

using test::write;

// The shared tiny experiment over both memory formats: two configurations.
const std::string kTinyExperiment =
    std::string(test::kTiny) + "matrix:\n  memory_format: [contiguous, channels_last]\n";

}  // namespace

TEST_CASE("orch run records every run in SQLite and prints the ranking", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTinyExperiment);
  const auto db = tmp.path() / "r.db";
  auto r = test::run_orch("--db '" + db.string() + "' run '" + (tmp.path() / "tiny.yaml").string() +
                          "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("[1/2] contiguous"));
  CHECK_THAT(r.output, Contains("sweep tiny"));
  REQUIRE(std::filesystem::exists(db));

  storage::Store store(db.string());
  storage::Statement st(store.database(),
                        "SELECT COUNT(*), SUM(status = 'ok'), MIN(images_per_s) FROM runs "
                        "WHERE experiment = 'tiny'");
  REQUIRE(st.step());
  CHECK(st.column_int(0) == 2);
  CHECK(st.column_int(1) == 2);
  CHECK(st.column_double(2) > 0);
  storage::Statement steps(store.database(), "SELECT COUNT(*) FROM run_steps");
  steps.step();
  CHECK(steps.column_int(0) == 6);

  auto rank = test::run_orch("--db '" + db.string() + "' rank");
  INFO(rank.output);
  CHECK(rank.exit_code == 0);
  CHECK(
      std::regex_search(rank.output, std::regex(R"(\s+1\s+(contiguous|channels_last)\s+[0-9.]+)")));
  CHECK_THAT(rank.output, Contains("1.00x"));
}

TEST_CASE("orch sweep makes the database's folder, and says so where it cannot", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTinyExperiment);
  const std::string file = (tmp.path() / "tiny.yaml").string();
  // A fresh checkout has no results/: the documented `--db results/x.db` must still work.
  const auto db = tmp.path() / "results" / "nights" / "r.db";
  auto r = test::run_orch("--db '" + db.string() + "' sweep '" + file + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(std::filesystem::exists(db));
  storage::Store store(db.string());
  storage::Statement st(store.database(), "SELECT COUNT(*) FROM runs WHERE status = 'ok'");
  REQUIRE(st.step());
  CHECK(st.column_int(0) == 2);

  // Where a file stands in the folder's way, nothing runs, and the message names the path.
  write(tmp.path() / "taken", "not a folder");
  const auto blocked = tmp.path() / "taken" / "r.db";
  auto b = test::run_orch("--db '" + blocked.string() + "' sweep '" + file + "'");
  INFO(b.output);
  CHECK(b.exit_code == 2);
  CHECK_THAT(b.output, Contains((tmp.path() / "taken").string() + " (ENOTDIR"));
  CHECK_THAT(b.output, !Contains("[1/2]"));
}

TEST_CASE("orch run refuses a bad experiment before creating the database", "[cli]") {
  test::TempDir tmp;
  const auto db = tmp.path() / "r.db";
  write(tmp.path() / "bad.yaml", "name: bad\nbase:\n  precision: {plugin: amp, dtype: fp8}\n");
  auto r =
      test::run_orch("--db '" + db.string() + "' run '" + (tmp.path() / "bad.yaml").string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("bad.yaml:3:"));
  CHECK_THAT(r.output, Contains("bf16"));
  CHECK_FALSE(std::filesystem::exists(db));
}

TEST_CASE("every file of the bad corpus is refused by the binary, and no database appears",
          "[cli]") {
  test::TempDir tmp;
  const auto db = tmp.path() / "r.db";
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(ORCH_FIXTURES_DIR) + "/bad")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    auto r = test::run_orch("--db '" + db.string() + "' run '" + entry.path().string() + "'");
    INFO(entry.path().filename() << ": " << r.output);
    CHECK(r.exit_code == 2);
    // file:line:col: ... on the first line of the error
    CHECK_THAT(r.output,
               Matches("(.|\n)*" + entry.path().filename().string() + ":[0-9]+:[0-9]+: (.|\n)*"));
    CHECK_FALSE(std::filesystem::exists(db));
  }
  CHECK(files >= 25);
}

TEST_CASE("orch plan prints the runs and validates without running", "[cli]") {
  auto r =
      test::run_orch(std::string("plan '") + ORCH_SOURCE_DIR + "/experiments/quickstart.yaml'");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("amp/channels_last"));
  CHECK_THAT(r.output, Contains("12 runs (4 configurations x 3 repeats)"));
}

TEST_CASE("every shipped experiment and benchmark file plans with the built plugins", "[cli]") {
  int files = 0;
  for (const char* dir : {"/experiments", "/bench/suites"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(ORCH_SOURCE_DIR) + dir)) {
      if (entry.path().extension() != ".yaml") continue;
      ++files;
      // The fault plugin is on the path for bench/suites/sweeps.sweep.yaml's injected failures.
      // Planned --elsewhere: the files name GPUs, datasets and model archives this machine need
      // not have (the machine's checks have tests of their own).
      auto r = test::run_orch(std::string("--plugin-path '") + ORCH_FAULT_PLUGIN_DIR +
                              "' plan --elsewhere '" + entry.path().string() + "'");
      INFO(entry.path() << "\n" << r.output);
      CHECK(r.exit_code == 0);
      // The plan table's last line counts the runs, and the estimate follows it (only those
      // lines are matched: std::regex recurses per character and overflows the stack on a
      // 144-run table).
      std::string out = r.output;
      while (!out.empty() && out.back() == '\n') out.pop_back();
      std::vector<std::string> tail;  // the lines after the table's rows, last first
      while (!out.empty() && tail.size() < 8) {
        const std::size_t nl = out.rfind('\n');
        tail.push_back(nl == std::string::npos ? out : out.substr(nl + 1));
        out.resize(nl == std::string::npos ? 0 : nl);
        if (tail.back().find(" runs (") != std::string::npos) break;
      }
      CHECK_THAT(tail.back(),
                 Matches("[0-9]+ runs? \\([0-9]+ configurations? x [0-9]+ repeats?\\)"));
      const bool estimated = std::any_of(tail.begin(), tail.end(), [](const std::string& line) {
        return line.rfind("estimate: ", 0) == 0;
      });
      CHECK(estimated);
    }
  }
  CHECK(files >= 5);
}

TEST_CASE("orch plugins lists plugins with parameters and names refused libraries", "[cli]") {
  auto r = test::run_orch(std::string("--plugin-path '") + ORCH_TEST_PLUGIN_DIR + "' plugins");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  // regex_search, not Matches("(.|\n)*..."): libstdc++'s regex recurses once per character
  // there, and the listing grew past what the stack holds (the test died with SIGSEGV).
  CHECK(std::regex_search(r.output, std::regex(R"(model\s+resnet\s+1\.0\.0)")));
  CHECK_THAT(r.output, Contains("depth (int, default 50) one of: 18, 34, 50, 101, 152"));
  CHECK_THAT(r.output, Contains("libabi_mismatch.so: it was built against orch SDK version 999"));
  CHECK_THAT(r.output, Contains("libcorrupt.so"));
}

TEST_CASE("orch rank without a database says so", "[cli]") {
  auto r = test::run_orch("--db /nonexistent/dir/x.db rank");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("no database at /nonexistent/dir/x.db"));
}
