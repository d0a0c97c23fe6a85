// Every mistake of an experiment file in one `orch plan`: the problems of independent keys,
// axis values, parameters and overrides are reported together, in file order, each at its own
// line and column, instead of one per run of the command.
#include <algorithm>
#include <catch2/catch.hpp>

#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using Catch::Contains;

// The errors planning `yaml` reports, as "line:col key.path"; fails when it plans.
std::vector<std::string> places(const std::string& yaml,
                                const std::vector<std::string>& overrides = {}) {
  try {
    test::plan_text(yaml, PlanOptions{overrides});
  } catch (const PlanErrors& e) {
    std::vector<std::string> out;
    for (const PlanError& p : e.errors) {
      out.push_back((p.file == "test.yaml" ? "" : p.file + ":") + std::to_string(p.line) + ":" +
                    std::to_string(p.col) + " " + p.key_path);
    }
    return out;
  } catch (const PlanError& e) {
    return {std::to_string(e.line) + ":" + std::to_string(e.col) + " " + e.key_path};
  }
  FAIL("expected the plan to be refused:\n" << yaml);
  return {};
}

TEST_CASE("plan errors: every bad key of base, the top level and the matrix at once",
          "[plan][errors]") {
  const std::string yaml = R"(name: bad name
base:
  model: {plugin: resnet, depth: 19, fused_bn: maybe}
  data: {plugin: synthetic, imagesize: 32}
  steps: {warmup: -1, measure: 0}
  batch_size: 0
  devise: cpu
batch_size: 8
matrix:
  precision: [fp32, fp64]
  memory_format: [contiguous, channel_last]
  include:
    - {optimizer.lr: -1}
)";
  CHECK(places(yaml) ==
        std::vector<std::string>{"1:7 name", "3:34 base.model.depth", "3:48 base.model.fused_bn",
                                 "4:29 base.data.imagesize", "5:19 base.steps.warmup",
                                 "5:32 base.steps.measure", "6:15 base.batch_size",
                                 "7:3 base.devise", "8:1 batch_size", "10:21 matrix.precision[1]",
                                 "11:31 matrix.memory_format[1]",
                                 "13:22 matrix.include[0].optimizer.lr"});
}

TEST_CASE("plan errors: what() lists them one per line, with what is allowed", "[plan][errors]") {
  try {
    test::plan_text("name: x\nbase:\n  batch_size: -4\n  memory_format: sideways\n");
    FAIL("planned");
  } catch (const PlanErrors& e) {
    REQUIRE(e.errors.size() == 2);
    CHECK(std::string(e.what()) ==
          std::string(e.errors[0].what()) + "\n" + std::string(e.errors[1].what()));
    CHECK_THAT(e.what(), Contains("test.yaml:3:15: base.batch_size: batch size must be positive"));
    CHECK_THAT(e.what(), Contains("test.yaml:4:18: base.memory_format: unknown value 'sideways'"));
  }
}

TEST_CASE("plan errors: the file's and the overrides' together, the file's first",
          "[plan][errors]") {
  const auto got = places("name: x\nbase:\n  batch_size: big\n", {"seed=-1", "nosuch=3"});
  REQUIRE(got.size() == 3);
  CHECK(got[0] == "3:15 base.batch_size");
  CHECK_THAT(got[1], Contains("seed"));
  CHECK_THAT(got[2], Contains("nosuch"));
}

TEST_CASE("plan errors: the matrix's own mistakes together", "[plan][errors]") {
  const std::string yaml = R"(name: m
matrix:
  batch_size: [32, 32]
  memory_format: []
  exclude:
    - {seed: 1}
    - {batch_size: 64}
  include:
    - {}
)";
  const auto got = places(yaml);
  CHECK(got.size() == 4);  // the duplicate, the empty axis, the exclude key, the empty include
  CHECK(std::find(got.begin(), got.end(), "3:20 matrix.batch_size[1]") != got.end());
  CHECK(std::find(got.begin(), got.end(), "4:18 matrix.memory_format") != got.end());
}

TEST_CASE("plan errors: a problem many combinations share is reported once", "[plan][errors]") {
  // toy has no `depth`: every combination with toy fails the same way.
  const auto got = places(R"(name: m
matrix:
  model: [toy]
  model.depth: [18, 50]
  batch_size: [8, 16, 32]
)");
  REQUIRE(got.size() == 2);  // one per depth value, not one per combination
}

}  // namespace
}  // namespace orch
