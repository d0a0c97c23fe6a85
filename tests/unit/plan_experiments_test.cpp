// The experiment files shipped with orch, and the full example in the docs, plan cleanly
// against the real plugins' schemas.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "plan/plan_table.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t configurations(const Plan& p) {
  std::set<std::string> hashes;
  for (const RunSpec& r : p.runs) hashes.insert(r.hash);
  return hashes.size();
}

TEST_CASE("experiments: resnet50-tuning.yaml plans 48 configurations x 3 repeats",
          "[plan][experiments]") {
  Plan p = make_plan(ORCH_SOURCE_DIR "/experiments/resnet50-tuning.yaml", test::real_catalog());
  CHECK(p.name == "resnet50-tuning");
  CHECK(p.axes ==
        std::vector<std::string>{"precision", "memory_format", "cudnn_benchmark", "batch_size"});
  CHECK(p.runs.size() == 144);
  CHECK(configurations(p) == 48);
  std::set<std::string> names;
  for (const RunSpec& r : p.runs) {
    names.insert(r.name);
    CHECK(r.model.plugin == "resnet");
    CHECK(r.model.params.get_int("depth") == 50);
    CHECK(r.data.plugin == "synthetic");
    CHECK(r.data.params.get_int("image_size") == 224);
    CHECK(r.cudnn_benchmark != "auto");
    CHECK(r.config.json()["repeat"] == 3);
  }
  CHECK(names.size() == 48);
  CHECK(names.count("amp-dtype=bf16/channels_last/cudnn_benchmark=on/b256") == 1);
  CHECK_THAT(format_plan_table(p), Catch::EndsWith("144 runs (48 configurations x 3 repeats)\n"));
}

TEST_CASE("experiments: the docs' full example plans as the docs say", "[plan][experiments]") {
  const std::string doc = read(ORCH_SOURCE_DIR "/docs/experiment-file.md");
  std::smatch m;
  REQUIRE(std::regex_search(doc, m, std::regex("## Full example\n\n```yaml\n([^`]*)```")));
  Plan p = make_plan_from_string(m[1].str(), "docs-example.yaml", test::real_catalog());
  CHECK(p.runs.size() == 16);
  CHECK(configurations(p) == 8);
  // The table printed in the docs is the planner's actual output.
  const std::string table = format_plan_table(p);
  CHECK(doc.find("```\n" + table + "```") != std::string::npos);
}

}  // namespace
}  // namespace orch
