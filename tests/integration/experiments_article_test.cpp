// experiments/article.yaml plans against the built plugins (its loaders, `nvjpeg` and
// `cuda-graph` are plugins the unit tests' fixed catalog does not hold). Planned as for another
// machine (no machine facts), so neither its dataset folder nor a GPU is needed here.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "integration/test_support.h"
#include "plan/planner.h"

namespace orch {
namespace {

// The article's ladder: each rung keeps the rungs above it and changes only what its label
// names, so a rank or compare between neighbours measures exactly one tip.
TEST_CASE("experiments: article.yaml is the article's ladder, one tip per rung",
          "[plan][experiments]") {
  Plan p = make_plan(ORCH_SOURCE_DIR "/experiments/article.yaml", test::built_plugins());
  std::vector<const RunSpec*> rungs;
  for (const RunSpec& r : p.runs)
    if (r.repeat == 0) rungs.push_back(&r);
  const std::vector<std::pair<std::string, std::set<std::string>>> ladder = {
      {"baseline", {}},
      {"+ loader", {"data"}},
      {"+ amp", {"precision"}},
      {"+ channels-last", {"memory_format"}},
      {"+ cudnn benchmark", {"cudnn_benchmark"}},
      {"+ batch 256", {"batch_size", "optimizer"}},
      {"+ gpu decode", {"data"}},
      {"+ fused path", {"model", "stream", "optimizer"}},
  };
  REQUIRE(rungs.size() == ladder.size());
  CHECK(p.runs.size() == 2 * ladder.size());
  for (std::size_t i = 0; i < ladder.size(); ++i) {
    INFO(ladder[i].first);
    CHECK(rungs[i]->name == ladder[i].first);
    if (i == 0) continue;
    std::set<std::string> changed;
    const nlohmann::json config = rungs[i]->config.json(), before = rungs[i - 1]->config.json();
    for (const auto& [key, value] : config.items()) {
      if (key == "label") continue;
      if (!before.contains(key) || before[key] != value) changed.insert(key);
    }
    CHECK(changed == ladder[i].second);
  }
  CHECK(rungs.front()->precision.plugin == "fp32");
  CHECK(rungs.back()->stream.plugin == "cuda-graph");
}

}  // namespace
}  // namespace orch
