// The planner end to end on YAML text: defaults, cartesian products, dotted axes, plugin and
// mapping values, include/exclude through real keys, repeats and limits.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "plan/planner.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using test::plan_failure;
using test::plan_text;

std::set<std::string> hashes(const Plan& p) {
  std::set<std::string> out;
  for (const RunSpec& r : p.runs) out.insert(r.hash);
  return out;
}

TEST_CASE("planner: a file with only a name is one run with every default", "[plan]") {
  Plan p = plan_text("name: defaults\n");
  CHECK(p.name == "defaults");
  CHECK(p.file == "test.yaml");
  CHECK(p.axes.empty());
  REQUIRE(p.runs.size() == 1);
  const RunSpec& r = p.runs[0];
  CHECK(r.name == "defaults");
  CHECK(r.experiment == "defaults");
  CHECK(r.repeat == 0);
  CHECK(r.hash.size() == 32);
  CHECK(r.model.plugin == "resnet");
  CHECK(r.model.params.get_int("depth") == 50);
  CHECK(r.data.plugin == "synthetic");
  CHECK(r.data.params.get_int("image_size") == 224);
  CHECK(r.data.params.get_int("channels") == 3);
  CHECK(r.data.params.get_int("classes") == 1000);
  CHECK(r.data.params.get_int("batches") == 4);
  CHECK(r.precision.plugin == "fp32");
  CHECK(r.precision.params.values().empty());
  CHECK(r.stream.plugin == "default");
  CHECK(r.batch_size == 64);
  CHECK(r.memory_format == "contiguous");
  CHECK(r.cudnn_benchmark == "auto");
  CHECK(r.optimizer.name == "sgd");
  CHECK(r.optimizer.impl == "foreach");
  CHECK(r.optimizer.lr == 0.1);
  CHECK(r.optimizer.momentum == 0.9);
  CHECK(r.optimizer.weight_decay == 1e-4);
  CHECK(r.warmup_steps == 10);
  CHECK(r.measure_steps == 50);
  CHECK(r.timeout_s == 1800);
  CHECK(r.device == "auto");
  CHECK(r.seed == 0);
  CHECK(r.swept.empty());
  CHECK(r.config.json()["repeat"] == 1);
  CHECK(r.config.json()["precision"] == nlohmann::json::parse(R"({"plugin":"fp32","params":{}})"));
}

TEST_CASE("planner: every base key reaches the RunSpec", "[plan]") {
  Plan p = plan_text(R"(
name: full
description: every key
base:
  model: {plugin: toy, width: 32, act: gelu, scale: 3, fused: yes}
  data: {plugin: synthetic, image_size: 64, channels: 1, classes: 10, batches: 2}
  precision: {plugin: amp, dtype: fp16}
  stream: {plugin: multi, streams: 4}
  batch_size: auto
  memory_format: channels_last
  cudnn_benchmark: off
  optimizer: {name: sgd, impl: fused, lr: 1, momentum: 0, weight_decay: 0.01}
  steps: {warmup: 0, measure: 7}
  repeat: 2
  timeout: 90s
  device: cuda:1
  seed: 42
)");
  CHECK(p.description == "every key");
  REQUIRE(p.runs.size() == 2);
  const RunSpec& r = p.runs[0];
  CHECK(r.model.plugin == "toy");
  CHECK(r.model.params.get_int("width") == 32);
  CHECK(r.model.params.get_string("act") == "gelu");
  CHECK(std::holds_alternative<double>(r.model.params.at("scale")));  // int given for a float
  CHECK(r.model.params.get_float("scale") == 3.0);
  CHECK(r.model.params.get_bool("fused") == true);
  CHECK(r.data.params.get_int("image_size") == 64);
  CHECK(r.data.params.get_int("classes") == 10);
  CHECK(r.precision.params.get_string("dtype") == "fp16");
  CHECK(r.stream.plugin == "multi");
  CHECK(r.stream.params.get_int("streams") == 4);
  CHECK_FALSE(r.batch_size.has_value());
  CHECK(r.config.json()["batch_size"] == "auto");
  CHECK(r.memory_format == "channels_last");
  CHECK(r.cudnn_benchmark == "off");
  CHECK(r.optimizer.impl == "fused");
  CHECK(r.optimizer.lr == 1.0);
  CHECK(r.optimizer.momentum == 0.0);
  CHECK(r.optimizer.weight_decay == 0.01);
  CHECK(r.warmup_steps == 0);
  CHECK(r.measure_steps == 7);
  CHECK(r.timeout_s == 90);
  CHECK(r.device == "cuda:1");
  CHECK(r.seed == 42);
  CHECK(p.runs[1].repeat == 1);
}

TEST_CASE("planner: scalar spellings are normalised", "[plan]") {
  struct Case {
    std::string base;
    std::string key;
    nlohmann::json expected;
  };
  auto c = GENERATE(Case{"cudnn_benchmark: on", "cudnn_benchmark", "on"},
                    Case{"cudnn_benchmark: true", "cudnn_benchmark", "on"},
                    Case{"cudnn_benchmark: \"off\"", "cudnn_benchmark", "off"},
                    Case{"cudnn_benchmark: no", "cudnn_benchmark", "off"},
                    Case{"cudnn_benchmark: auto", "cudnn_benchmark", "auto"},
                    Case{"timeout: 2h", "timeout", 7200.0}, Case{"timeout: 1.5m", "timeout", 90.0},
                    Case{"timeout: 45", "timeout", 45.0}, Case{"timeout: 30s", "timeout", 30.0},
                    Case{"batch_size: auto", "batch_size", "auto"},
                    Case{"batch_size: +8", "batch_size", 8}, Case{"device: cpu", "device", "cpu"});
  Plan p = plan_text("name: n\nbase:\n  " + c.base + "\n");
  CHECK(p.runs[0].config.json()[c.key] == c.expected);
}

TEST_CASE("planner: optimizer.impl is loop, foreach or fused, and can be an axis", "[plan]") {
  Plan p = plan_text("name: n\nmatrix:\n  optimizer.impl: [loop, foreach, fused]\n");
  REQUIRE(p.runs.size() == 3);
  CHECK(p.runs[0].optimizer.impl == "loop");
  CHECK(p.runs[1].optimizer.impl == "foreach");
  CHECK(p.runs[2].optimizer.impl == "fused");
  CHECK(p.runs[2].config.json()["optimizer"]["impl"] == "fused");
  CHECK(hashes(p).size() == 3);  // the implementation is part of the configuration

  PlanError e = plan_failure("name: n\nbase:\n  optimizer: {impl: fusd}\n");
  CHECK(e.key_path == "base.optimizer.impl");
  CHECK(e.line == 3);
  CHECK_THAT(e.message, Catch::Contains("unknown value 'fusd'; did you mean 'fused'?"));
  CHECK(e.allowed == "loop, foreach, fused");
}

TEST_CASE("planner: cartesian product sizes", "[plan]") {
  struct Case {
    std::string axes;
    std::size_t runs;
  };
  auto c = GENERATE(
      Case{"batch_size: [64, 128]", 2},
      Case{"batch_size: [64, 128]\n  memory_format: [contiguous, channels_last]", 4},
      Case{"precision: [fp32, amp]\n  memory_format: [contiguous, channels_last]\n"
           "  model.depth: [18, 50]\n  data.image_size: [64, 224]\n  batch_size: [64, 128]",
           32},
      Case{"seed: [0, 1, 2]\n  device: [cpu, cuda, 'cuda:1']", 9},
      Case{"optimizer.lr: [0.1, 0.01, 0.001]\n  steps.warmup: [0, 5]", 6},
      Case{"model: [resnet, toy]\n  cudnn_benchmark: [on, off, auto]", 6});
  Plan p = plan_text("name: t\nmatrix:\n  " + c.axes + "\n");
  CHECK(p.runs.size() == c.runs);
  CHECK(hashes(p).size() == c.runs);  // every combination is a different configuration
}

TEST_CASE("planner: combinations come in order, first axis slowest", "[plan]") {
  Plan p = plan_text(R"(
name: order
matrix:
  precision: [fp32, {plugin: amp, dtype: bf16}]
  memory_format: [contiguous, channels_last]
)");
  CHECK(p.axes == std::vector<std::string>{"precision", "memory_format"});
  REQUIRE(p.runs.size() == 4);
  const char* expected[4][2] = {{"fp32", "contiguous"},
                                {"fp32", "channels_last"},
                                {"amp-bf16", "contiguous"},
                                {"amp-bf16", "channels_last"}};
  for (int i = 0; i < 4; ++i) {
    CHECK(p.runs[i].swept.at("precision") == expected[i][0]);
    CHECK(p.runs[i].swept.at("memory_format") == expected[i][1]);
    CHECK(p.runs[i].memory_format == expected[i][1]);
  }
  CHECK(p.runs[0].precision.plugin == "fp32");
  CHECK(p.runs[2].precision.plugin == "amp");
  CHECK(p.runs[2].precision.params.get_string("dtype") == "bf16");
}

TEST_CASE("planner: dotted axes set one plugin parameter or group field", "[plan]") {
  Plan p = plan_text(R"(
name: dotted
base:
  optimizer: {momentum: 0.5}
matrix:
  model.depth: [18, 101]
  data.image_size: [32]
  optimizer.lr: [0.05]
  steps.warmup: [3]
)");
  REQUIRE(p.runs.size() == 2);
  CHECK(p.runs[0].model.params.get_int("depth") == 18);
  CHECK(p.runs[1].model.params.get_int("depth") == 101);
  for (const RunSpec& r : p.runs) {
    CHECK(r.data.params.get_int("image_size") == 32);
    CHECK(r.data.params.get_int("channels") == 3);
    CHECK(r.optimizer.lr == 0.05);
    CHECK(r.optimizer.momentum == 0.5);  // a field path keeps the group's other fields
    CHECK(r.warmup_steps == 3);
    CHECK(r.measure_steps == 50);
  }
  CHECK(p.runs[0].swept.at("model.depth") == "18");
  CHECK(p.runs[0].swept.at("optimizer.lr") == "0.05");
}

TEST_CASE("planner: shorter paths are applied first, whatever the file order", "[plan]") {
  Plan p = plan_text(R"(
name: order
matrix:
  precision.dtype: [bf16, fp16]
  precision: [amp]
)");
  REQUIRE(p.runs.size() == 2);
  CHECK(p.runs[0].precision.plugin == "amp");
  CHECK(p.runs[0].precision.params.get_string("dtype") == "bf16");
  CHECK(p.runs[1].precision.params.get_string("dtype") == "fp16");
}

TEST_CASE("planner: a plugin value replaces the whole choice", "[plan]") {
  Plan p = plan_text(R"(
name: replace
base:
  precision: {plugin: amp, dtype: fp16}
  model: {plugin: resnet, depth: 101}
matrix:
  precision: [fp32, amp]
  model: [toy]
)");
  REQUIRE(p.runs.size() == 2);
  CHECK(p.runs[0].precision.plugin == "fp32");
  CHECK(p.runs[1].precision.params.get_string("dtype") == "bf16");  // amp's default, not fp16
  CHECK(p.runs[0].model.plugin == "toy");
  CHECK(p.runs[0].model.params.get_int("width") == 8);
}

TEST_CASE("planner: a plugin mapping without 'plugin' means the role's default", "[plan]") {
  Plan p = plan_text("name: d\nbase:\n  model: {depth: 101}\n");
  CHECK(p.runs[0].model.plugin == "resnet");
  CHECK(p.runs[0].model.params.get_int("depth") == 101);
}

TEST_CASE("planner: mapping values on axes", "[plan]") {
  Plan p = plan_text(R"(
name: maps
matrix:
  model:
    - resnet
    - {plugin: toy, width: 16, act: gelu, scale: 2, fused: true}
  optimizer:
    - {lr: 0.5}
    - {lr: 0.01, momentum: 0}
)");
  REQUIRE(p.runs.size() == 4);
  const RunSpec& toy = p.runs[2];
  CHECK(toy.model.plugin == "toy");
  CHECK(toy.model.params.get_int("width") == 16);
  CHECK(toy.model.params.get_string("act") == "gelu");
  CHECK(toy.model.params.get_float("scale") == 2.0);
  CHECK(toy.model.params.get_bool("fused"));
  CHECK(toy.swept.at("model") == "toy-16-gelu-2.0-true");  // declared order: width act scale fused
  CHECK(p.runs[0].optimizer.lr == 0.5);
  CHECK(p.runs[0].optimizer.momentum == 0.9);  // a group value resets unwritten fields
  CHECK(p.runs[1].optimizer.momentum == 0.0);
  CHECK(p.runs[0].swept.at("optimizer") == "lr=0.5");
  CHECK(p.runs[1].swept.at("optimizer") == "lr=0.01,momentum=0.0");
}

TEST_CASE("planner: include and exclude on real keys, values compared by meaning", "[plan]") {
  Plan p = plan_text(R"(
name: incl
matrix:
  precision: [fp32, {plugin: amp, dtype: bf16}]
  batch_size: [64, 128]
  exclude:
    - {precision: amp, batch_size: 64}
  include:
    - {precision: {plugin: amp}, steps.warmup: 50}
    - {precision: fp32, batch_size: 256}
)");
  CHECK(p.axes == std::vector<std::string>{"precision", "batch_size", "steps.warmup"});
  REQUIRE(p.runs.size() == 4);
  std::vector<std::string> got;
  for (const RunSpec& r : p.runs) {
    got.push_back(r.swept.at("precision") + " " + r.swept.at("batch_size") + " " +
                  r.swept.at("steps.warmup"));
  }
  CHECK(got ==
        std::vector<std::string>{"fp32 64 10", "fp32 128 10", "amp-bf16 128 50", "fp32 256 10"});
  CHECK(p.runs[2].warmup_steps == 50);
}

TEST_CASE("planner: include can set a plugin parameter of the chosen plugin", "[plan]") {
  Plan p = plan_text(R"(
name: incl-param
matrix:
  precision: [fp32, amp]
  include:
    - {precision: amp, precision.dtype: fp16}
)");
  REQUIRE(p.runs.size() == 2);
  CHECK(p.runs[1].precision.params.get_string("dtype") == "fp16");
  CHECK(p.runs[0].swept.at("precision.dtype") == "");  // fp32 has no dtype
}

TEST_CASE("planner: repeat gives adjacent runs of one configuration", "[plan]") {
  Plan p = plan_text(R"(
name: rep
base:
  repeat: 3
matrix:
  batch_size: [64, 128]
)");
  REQUIRE(p.runs.size() == 6);
  for (int i = 0; i < 6; ++i) {
    CHECK(p.runs[i].repeat == i % 3);
    CHECK(p.runs[i].hash == p.runs[i - i % 3].hash);
    CHECK(p.runs[i].name == p.runs[i - i % 3].name);
    CHECK(p.runs[i].config.json()["repeat"] == 3);
  }
  CHECK(p.runs[0].hash != p.runs[3].hash);
}

TEST_CASE("planner: plans larger than max_runs are refused", "[plan]") {
  const std::string yaml = R"(
name: big
base:
  repeat: 2
matrix:
  batch_size: [1, 2, 3]
  seed: [0, 1]
)";
  CHECK(plan_text(yaml, PlanOptions{{}, 12}).runs.size() == 12);
  PlanError e = plan_failure(yaml, PlanOptions{{}, 11});
  CHECK(e.line == 5);
  CHECK(e.key_path == "matrix");
  CHECK_THAT(e.message, Catch::Contains("12 runs (6 configurations x 2 repeats)"));
  CHECK_THAT(e.message, Catch::Contains("--max-runs"));

  PlanError no_matrix = plan_failure("name: x\nbase:\n  repeat: 5\n", PlanOptions{{}, 4});
  CHECK(no_matrix.key_path == "base.repeat");
  CHECK_THAT(no_matrix.message, Catch::Contains("5 runs"));
}

TEST_CASE("planner: a missing default plugin is reported", "[plan]") {
  FixedCatalog catalog(test::real_plugins());
  FixedCatalog no_resnet;
  for (const PluginInfo& p : test::real_plugins()) {
    if (p.name != "resnet") no_resnet.add(p);
  }
  PlanError e = plan_failure("name: x\n", {}, no_resnet);
  CHECK(e.key_path == "base.model");
  CHECK_THAT(e.message, Catch::Contains("the default, 'resnet', is not installed"));
  CHECK(plan_text("name: x\n", {}, catalog).runs.size() == 1);
}

TEST_CASE("planner: make_plan reads a file and reports an unreadable one", "[plan]") {
  const std::string path =
      (std::filesystem::temp_directory_path() / "orch_plan_planner_test.yaml").string();
  {
    std::ofstream out(path);
    out << "name: from-file\nmatrix:\n  seed: [1, 2]\n";
  }
  Plan p = make_plan(path, test::test_catalog());
  CHECK(p.file == path);
  CHECK(p.runs.size() == 2);
  std::remove(path.c_str());

  try {
    make_plan("does/not/exist.yaml", test::test_catalog());
    FAIL("no PlanError");
  } catch (const PlanError& e) {
    CHECK(e.file == "does/not/exist.yaml");
    CHECK_THAT(e.what(), Catch::StartsWith("does/not/exist.yaml: cannot read the file"));
  }
}

TEST_CASE("planner: PlanError::what() leaves out empty parts", "[plan]") {
  CHECK(std::string(PlanError("f.yaml", 3, 7, "base.x", "bad", "a, b").what()) ==
        "f.yaml:3:7: base.x: bad (allowed: a, b)");
  CHECK(std::string(PlanError("f.yaml", 3, 7, "", "bad").what()) == "f.yaml:3:7: bad");
  CHECK(std::string(PlanError("f.yaml", 0, 0, "", "bad").what()) == "f.yaml: bad");
  CHECK(std::string(PlanError("", 0, 0, "k", "bad").what()) == "k: bad");
}

}  // namespace
}  // namespace orch

namespace orch {

TEST_CASE("planner: steps.warmup is an int or auto", "[plan][warmup]") {
  const Plan p = test::plan_text(
      "name: n\nbase: {device: cpu}\nmatrix:\n  steps: [{warmup: auto}, {warmup: 7}]\n");
  REQUIRE(p.runs.size() == 2);
  CHECK(p.runs[0].warmup_auto);
  CHECK(p.runs[0].warmup_steps == kAutoWarmupMinSteps);
  CHECK(p.runs[0].config.json()["steps"]["warmup"] == "auto");
  CHECK_FALSE(p.runs[1].warmup_auto);
  CHECK(p.runs[1].warmup_steps == 7);
  CHECK(p.runs[0].hash != p.runs[1].hash);
  const PlanError e = test::plan_failure("name: n\nbase:\n  steps: {warmup: often}\n");
  CHECK(e.key_path == "base.steps.warmup");
  CHECK(e.allowed == "int >= 0, or auto");
}

}  // namespace orch
