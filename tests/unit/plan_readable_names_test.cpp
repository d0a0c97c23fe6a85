// Readable names: only what differs, mapping fields as key=value (a true flag as its key), never
// a whole optimizer or a full path; include labels name their configuration.
#include <catch2/catch.hpp>
#include <set>

#include "plan/plan_table.h"
#include "plan/readable_name.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using Catch::Matchers::Contains;
using test::plan_failure;
using test::plan_text;

std::vector<std::string> names(const Plan& p) {
  std::vector<std::string> out;
  for (const RunSpec& r : p.runs) out.push_back(r.name);
  return out;
}

TEST_CASE("readable names: paths show their shortest distinguishing tail", "[plan][names]") {
  CHECK(distinguishing_tails({"/tmp/photos", "/data/imagenet/"}) ==
        std::vector<std::string>{"photos", "imagenet"});
  CHECK(distinguishing_tails({"/data/a/train", "/data/b/train"}) ==
        std::vector<std::string>{"a/train", "b/train"});
  CHECK(distinguishing_tails({"/x/train", "/x/train"}) ==
        std::vector<std::string>{"train", "train"});
  CHECK(distinguishing_tails({"train", "/a/train"}) ==
        std::vector<std::string>{"train", "a/train"});
}

TEST_CASE("readable names: pieces by style, only those that differ", "[plan][names]") {
  using S = PieceStyle;
  const std::vector<NamePiece> pieces = {
      {"data", S::kValue, "", 0, '-', -1},         {"root", S::kSetting, "", 0, '-', 0},
      {"workers", S::kLeaf, "", 0, '-', 0},        {"pin", S::kFlag, "", 0, '-', 0},
      {"batch_size", S::kPrefix, "b", 1, '-', -1}, {"impl", S::kSetting, "", 2, ',', -1},
      {"lr", S::kSetting, "", 2, ',', -1}};
  using V = std::vector<std::optional<std::string>>;
  const std::vector<V> values = {
      {"imagefolder", "/tmp/photos", "14", "true", "256", "fused", "0.1"},
      {"imagefolder", "/mnt/imagenet", "14", "false", "256", "foreach", "0.1"},
      {"imagefolder", "/tmp/photos", "4", "false", "256", "fused", "0.1"}};
  CHECK(make_readable_names(pieces, values, "exp") ==
        std::vector<std::string>{"root=photos-workers=14-pin/impl=fused",
                                 "root=imagenet-workers=14/impl=foreach",
                                 "root=photos-workers=4/impl=fused"});
  // A plugin's name shows when it differs; a parameter only one plugin has does not show for
  // being absent from the others.
  const std::vector<NamePiece> roles = {{"data", S::kValue, "", 0, '-', -1},
                                        {"root", S::kSetting, "", 0, '-', 0}};
  CHECK(make_readable_names(roles, {{"synthetic", std::nullopt}, {"imagefolder", "/tmp/photos"}},
                            "exp") == std::vector<std::string>{"synthetic", "imagefolder"});
}

TEST_CASE("readable names: a configuration with only flags off is named by them", "[plan][names]") {
  const std::vector<NamePiece> pieces = {{"fused_bn", PieceStyle::kFlag, "", 0, '-', -1},
                                         {"conv_bn_stats", PieceStyle::kFlag, "", 0, '-', -1}};
  CHECK(make_readable_names(pieces, {{"false", "false"}, {"true", "false"}, {"true", "true"}},
                            "exp") == std::vector<std::string>{"no-fused_bn,no-conv_bn_stats",
                                                               "fused_bn",
                                                               "fused_bn-conv_bn_stats"});
}

TEST_CASE("readable names: a whole optimizer shows only the fields that differ", "[plan][names]") {
  Plan p = plan_text(R"(
name: opt
matrix:
  precision: [fp32]
  include:
    - {precision: fp32, optimizer: {name: sgd, impl: fused, lr: 0.1, momentum: 0.9}}
    - {precision: amp, optimizer: {name: sgd, impl: foreach, lr: 0.1, momentum: 0.9}}
)");
  CHECK(names(p) == std::vector<std::string>{"fp32/impl=fused", "amp/impl=foreach"});
}

TEST_CASE("readable names: boolean plugin parameters show as their key", "[plan][names]") {
  Plan p = plan_text(R"(
name: bn
base:
  model: resnet
matrix:
  model:
    - resnet
    - {plugin: resnet, fused_bn: true}
    - {plugin: resnet, fused_bn: true, max_pool_impl: aten}
)");
  CHECK(names(p) == std::vector<std::string>{"max_pool_impl=orch", "fused_bn-max_pool_impl=orch",
                                             "fused_bn-max_pool_impl=aten"});
}

TEST_CASE("readable names: the issue's long names become short", "[plan][names]") {
  // Before: amp-fp16/cuda-graph/resnet-50-true-true/name=sgd,impl=fused,lr=0.1,...
  Plan p = plan_text(R"(
name: long
matrix:
  precision: [{plugin: amp, dtype: fp16}]
  model: [{plugin: resnet, depth: 50, fused_bn: true}, {plugin: resnet, depth: 50}]
  optimizer:
    - {name: sgd, impl: fused, lr: 0.1, momentum: 0.9, weight_decay: 0.0001}
    - {name: sgd, impl: foreach, lr: 0.1, momentum: 0.9, weight_decay: 0.0001}
)");
  CHECK(names(p) == std::vector<std::string>{"fused_bn/impl=fused", "fused_bn/impl=foreach",
                                             "impl=fused", "impl=foreach"});
}

TEST_CASE("readable names: stay unique in a larger plan", "[plan][names]") {
  Plan p = plan_text(R"(
name: big
matrix:
  model: [resnet, toy, {plugin: toy, width: 16}, {plugin: toy, fused: true}]
  data.image_size: [64, 128]
  optimizer: [{lr: 0.1}, {lr: 0.01, impl: fused}]
  device: [cpu, cuda]
)");
  std::set<std::string> all;
  for (const RunSpec& r : p.runs) {
    all.insert(r.name);
    CHECK(r.name.size() <= kNameAim);
    CHECK(r.name.find("name=") == std::string::npos);  // never the whole optimizer
  }
  CHECK(all.size() == p.runs.size());
}

TEST_CASE("labels: an include label names its configuration", "[plan][names][labels]") {
  Plan p = plan_text(R"(
name: ladder
matrix:
  precision: [fp32]
  include:
    - {precision: fp32, label: baseline}
    - {precision: amp, memory_format: channels_last, label: "+ AMP, channels-last"}
)");
  REQUIRE(p.runs.size() == 2);
  CHECK(names(p) == std::vector<std::string>{"baseline", "+ AMP, channels-last"});
  // Not an axis, not part of the configuration.
  CHECK(p.axes == std::vector<std::string>{"precision", "memory_format"});
  Plan unlabelled = plan_text(R"(
name: ladder
matrix:
  precision: [fp32]
  include:
    - {precision: fp32}
    - {precision: amp, memory_format: channels_last}
)");
  CHECK(p.runs[0].hash == unlabelled.runs[0].hash);
  CHECK(p.runs[1].hash == unlabelled.runs[1].hash);
  CHECK(p.runs[0].config == unlabelled.runs[0].config);
}

TEST_CASE("labels: must be unique and name one configuration", "[plan][names][labels]") {
  PlanError twice = plan_failure(R"(
name: x
matrix:
  precision: [fp32]
  include:
    - {precision: fp32, label: same}
    - {precision: amp, label: same}
)");
  CHECK(twice.line == 7);
  CHECK(twice.col == 31);
  CHECK(twice.key_path == "matrix.include[1].label");
  CHECK_THAT(twice.message, Contains("already the name of another configuration") &&
                                Contains("matrix.include[0].label"));

  PlanError clash = plan_failure(R"(
name: x
matrix:
  precision: [fp32, tf32]
  include:
    - {precision: amp, label: fp32}
)");
  CHECK(clash.line == 6);
  CHECK_THAT(clash.message, Contains("already the name of another configuration"));

  PlanError many = plan_failure(R"(
name: x
matrix:
  precision: [fp32, tf32]
  include:
    - {batch_size: 64, label: small}
)");
  CHECK(many.line == 6);
  CHECK(many.key_path == "matrix.include[0].label");
  CHECK_THAT(many.message, Contains("more than one configuration"));

  PlanError bad = plan_failure(R"(
name: x
matrix:
  precision: [fp32]
  include:
    - {precision: amp, label: "a\tb"}
)");
  CHECK(bad.line == 6);
  CHECK_THAT(bad.message, Contains("expected a label"));

  PlanError alone = plan_failure(R"(
name: x
matrix:
  precision: [fp32]
  include:
    - {label: only}
)");
  CHECK_THAT(alone.message, Contains("besides its label"));
}

TEST_CASE("names: the plan table says when a name passes the aim", "[plan][names]") {
  Plan p = plan_text(R"(
name: wide
matrix:
  precision: [fp32]
  include:
    - {precision: amp, label: a-label-that-is-far-longer-than-anyone-wants-to-read-in-a-table}
)");
  CHECK_THAT(format_plan_table(p), Contains("longer than 60 characters") && Contains("label:"));
  CHECK_THAT(format_plan_table(plan_text("name: s\nmatrix:\n  precision: [fp32, amp]\n")),
             !Contains("longer than"));
}

}  // namespace
}  // namespace orch
