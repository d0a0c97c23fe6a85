// A sweep with a learning rate that cannot train, for real on the CPU: the run is recorded
// `diverged` as the configuration's failure, the progress and the summary count it, the exit
// code says not every run is ok, `orch rank` lists it outside the ranking (and ranks it,
// marked, when asked), and a resume does not run it again.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <sstream>

#include "integration/test_support.h"
#include "storage/store.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

// The fault model doing nothing but train (mode: none): a conv and a linear layer with no
// normalisation, so SGD at lr 1e30 overflows float32 within a step or two.
constexpr const char* kExperiment = R"(name: lr
base:
  model: {plugin: fault}
  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}
  batch_size: 4
  device: cpu
  steps: {warmup: 1, measure: 3}
  telemetry: {enabled: false}
matrix:
  optimizer.lr: [0.01, 1.0e30]
)";

}  // namespace

TEST_CASE("sweep: a learning rate of 1e30 is recorded diverged, counted, and not ranked",
          "[sweep]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db", file = tmp.path() / "lr.yaml";
  std::ofstream(file) << kExperiment;
  const std::string orch =
      "--db '" + db.string() + "' --plugin-path '" + ORCH_FAULT_PLUGIN_DIR + "' ";
  auto r = test::run_orch(orch + "sweep '" + file.string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 1);  // not every run is ok
  CHECK(std::regex_search(r.output, std::regex(R"(: diverged: the loss became (nan|inf|-inf) )"
                                               R"(at measured step \d of 3)")));
  CHECK_THAT(r.output, Contains("| failures 1 (1 diverged) |"));
  CHECK_THAT(r.output, Contains("1 ok, 1 not ok (1 diverged), 0 skipped"));

  std::string diverged_name, ok_name;
  {
    storage::Store store(db.string());
    const auto id = store.find_sweep("lr");
    REQUIRE(id);
    const auto runs = store.runs(*id);
    REQUIRE(runs.size() == 2);
    for (const auto& run : runs) {
      if (run.config["optimizer"]["lr"].get<double>() > 1) {
        CHECK(run.status == "diverged");
        diverged_name = run.name;
      } else {
        CHECK(run.status == "ok");
        ok_name = run.name;
      }
    }
    storage::Statement st(store.database(),
                          "SELECT failure_class FROM runs WHERE status = 'diverged'");
    REQUIRE(st.step());
    CHECK(st.column_text(0) == "configuration");
  }
  REQUIRE_FALSE(diverged_name.empty());
  REQUIRE_FALSE(ok_name.empty());

  auto rank = test::run_orch(orch + "rank");
  INFO(rank.output);
  CHECK(rank.exit_code == 0);
  CHECK_THAT(rank.output, Contains("1 configurations from 1 successful runs\n"));
  CHECK_THAT(rank.output, Contains("1 diverged run(s) (loss NaN or infinite) are not ranked"));
  CHECK_THAT(rank.output, Contains("  " + diverged_name + " (repeat 0): the loss became "));
  CHECK(rank.output.find("DIVERGED") == std::string::npos);

  auto all = test::run_orch(orch + "rank --include-diverged");
  INFO(all.output);
  CHECK(all.exit_code == 0);
  CHECK_THAT(all.output, Contains("2 configurations from 1 successful runs and 1 diverged\n"));
  // Its row in the table, marked.
  bool marked_row = false;
  std::istringstream lines(all.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" " + diverged_name + " ") != std::string::npos &&
        std::regex_search(line, std::regex(R"(^\s*\d+\s)")))
      marked_row = line.find("DIVERGED") != std::string::npos;
  }
  CHECK(marked_row);

  // The same command again: both runs are final, nothing runs, and it still exits 1.
  auto again = test::run_orch(orch + "sweep '" + file.string() + "'");
  INFO(again.output);
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.output, Contains("2 already finished, 0 to run"));
}
