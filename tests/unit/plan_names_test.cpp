// Run names: built only from what differs between configurations, readable, and unique.
#include <catch2/catch.hpp>
#include <set>

#include "plan/readable_name.h"
#include "plan/scalars.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using test::plan_text;

std::vector<std::string> names(const Plan& p) {
  std::vector<std::string> out;
  for (const RunSpec& r : p.runs) out.push_back(r.name);
  return out;
}

TEST_CASE("names: self-explanatory values", "[plan][names]") {
  CHECK(self_explanatory("channels_last"));
  CHECK(self_explanatory("bf16"));
  CHECK(self_explanatory("cuda:1"));
  CHECK_FALSE(self_explanatory("on"));
  CHECK_FALSE(self_explanatory("Off"));
  CHECK_FALSE(self_explanatory("auto"));
  CHECK_FALSE(self_explanatory("true"));
  CHECK_FALSE(self_explanatory("18"));
  CHECK_FALSE(self_explanatory("0.01"));
  CHECK_FALSE(self_explanatory(""));
  CHECK_FALSE(self_explanatory("{\"a\":1}"));
}

TEST_CASE("names: characters that do not belong in a name become '_'", "[plan][names]") {
  CHECK(name_safe("a/b c") == "a_b_c");  // '/' separates parts
  CHECK(name_safe("lr=0.1,impl=fused") == "lr=0.1,impl=fused");
  CHECK(name_safe("cuda:1+x-y") == "cuda:1+x-y");
  CHECK(name_safe("$(rm)*") == "__rm__");
}

TEST_CASE("names: only varying pieces, fallback, and disambiguation", "[plan][names]") {
  const std::vector<NamePiece> pieces = {{"a", PieceStyle::kLeaf, "", 0, '-', -1},
                                         {"b", PieceStyle::kLeaf, "", 1, '-', -1}};
  using V = std::vector<std::optional<std::string>>;
  CHECK(make_readable_names(pieces, {V{"1", "x"}, V{"2", "x"}}, "exp") ==
        std::vector<std::string>{"a=1", "a=2"});
  CHECK(make_readable_names(pieces, {V{"1", "x"}}, "exp") == std::vector<std::string>{"exp"});
  CHECK(make_readable_names({}, {V{}, V{}}, "exp") == std::vector<std::string>{"exp", "exp~2"});
  // Two different values that render to the same part still get distinct names.
  CHECK(make_readable_names(pieces, {V{"p q", "x"}, V{"p_q", "x"}, V{"p_q", "y"}}, "exp") ==
        std::vector<std::string>{"p_q/x", "p_q/x~2", "p_q/y"});
}

TEST_CASE("names: the documented example amp-bf16/channels_last/b256", "[plan][names]") {
  Plan p = plan_text(R"(
name: article
base:
  model: {plugin: resnet, depth: 50}
matrix:
  precision: [fp32, {plugin: amp, dtype: bf16}]
  memory_format: [contiguous, channels_last]
  batch_size: [128, 256]
)");
  std::vector<std::string> got = names(p);
  CHECK(got.size() == 8);
  CHECK(got[0] == "fp32/contiguous/b128");
  // amp's dtype is the same in every amp configuration, so the plugin's name says enough.
  CHECK(got[7] == "amp/channels_last/b256");
}

TEST_CASE("names: only values that differ between configurations", "[plan][names]") {
  Plan p = plan_text(R"(
name: partial
matrix:
  precision: [amp]
  model.depth: [18, 50]
  cudnn_benchmark: [on, off]
  device: [cuda]
)");
  CHECK(names(p) ==
        std::vector<std::string>{"depth=18/cudnn_benchmark=on", "depth=18/cudnn_benchmark=off",
                                 "depth=50/cudnn_benchmark=on", "depth=50/cudnn_benchmark=off"});
}

TEST_CASE("names: plugin choices show their explicitly set parameters", "[plan][names]") {
  Plan p = plan_text(R"(
name: plugins
matrix:
  precision: [fp32, amp, {plugin: amp, dtype: fp16}]
)");
  // Plain `amp` is bf16, its default: the name says so, since another amp configuration is fp16.
  CHECK(names(p) == std::vector<std::string>{"fp32", "amp-dtype=bf16", "amp-dtype=fp16"});
}

TEST_CASE("names: one configuration is named after the experiment", "[plan][names]") {
  CHECK(names(plan_text("name: solo\nbase:\n  repeat: 2\n")) ==
        std::vector<std::string>{"solo", "solo"});
  CHECK(names(plan_text("name: solo\nmatrix:\n  batch_size: [32]\n")) ==
        std::vector<std::string>{"solo"});
}

TEST_CASE("names: unique per configuration in a larger plan", "[plan][names]") {
  Plan p = plan_text(R"(
name: big
base:
  repeat: 2
matrix:
  model: [resnet, toy, {plugin: toy, width: 16}]
  data.image_size: [64, 128]
  optimizer.lr: [0.1, 0.01]
  device: [cpu, cuda]
  include:
    - {model: toy, steps.warmup: 5}
)");
  std::set<std::string> unique_names, unique_hashes;
  for (const RunSpec& r : p.runs) {
    unique_names.insert(r.name);
    unique_hashes.insert(r.hash);
  }
  CHECK(unique_hashes.size() == 24);
  CHECK(unique_names.size() == 24);
}

}  // namespace
}  // namespace orch

namespace orch {
namespace {

TEST_CASE("names: an include's keys name the configurations it joined, not every other one",
          "[plan][names]") {
  Plan p = test::plan_text(R"(
name: inc
base:
  batch_size: 8
matrix:
  precision: [fp32, amp]
  include:
    - {precision: fp32, memory_format: channels_last, batch_size: 16}
)");
  CHECK(names(p) == std::vector<std::string>{"fp32/channels_last/b16", "amp"});
  // The table still shows every configuration's value of the include's keys.
  CHECK(p.runs[1].swept.at("memory_format") == "contiguous");
  CHECK(p.runs[1].swept.at("batch_size") == "8");
}

TEST_CASE("names: numbers in their shortest form", "[plan][names]") {
  Plan p = test::plan_text("name: n\nmatrix:\n  optimizer.lr: [0.1, 1e30, 1e-7, 2]\n");
  CHECK(names(p) == std::vector<std::string>{"lr=0.1", "lr=1e+30", "lr=1e-07", "lr=2.0"});
  CHECK(p.runs[1].swept.at("optimizer.lr") == "1e+30");
  CHECK(number_text(1e30) == "1e+30");
  CHECK(number_text(0.1) == "0.1");
  CHECK(number_text(2) == "2.0");
  CHECK(number_text(-3e-5) == "-3e-05");
  CHECK(number_text(65536) == "65536.0");
}

TEST_CASE("names: the plugin column shows the parameter any configuration sets, resolved",
          "[plan][names]") {
  Plan p =
      test::plan_text("name: p\nmatrix:\n  precision: [fp32, amp, {plugin: amp, dtype: fp16}]\n");
  std::vector<std::string> column;
  for (const RunSpec& r : p.runs) column.push_back(r.swept.at("precision"));
  // Plain `amp` is amp at its default dtype, bf16: the column says so beside amp-fp16.
  CHECK(column == std::vector<std::string>{"fp32", "amp-bf16", "amp-fp16"});
  // With nothing set anywhere, the plugin's name alone.
  Plan q = test::plan_text("name: q\nmatrix:\n  precision: [fp32, amp]\n");
  CHECK(q.runs[1].swept.at("precision") == "amp");
}

}  // namespace
}  // namespace orch
