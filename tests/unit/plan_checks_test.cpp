// Plan-time checks of resolved configurations (plan/plan_checks.h): the host's own (device and
// GPUs, a batch no device can hold, the optimizer's numbers) and those a plugin declares
// through PluginInfo::check, all reported together at the places that cause them.
#include "plan/plan_checks.h"

#include <catch2/catch.hpp>

#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

// A stream plugin with a check of its own, like cuda-graph's: fp16 needs the fused optimizer,
// and the strategy needs a GPU on the machine that runs it.
std::vector<PlanProblem> graph_check(const PlanCheckInput& in) {
  std::vector<PlanProblem> out;
  if (in.text("precision.dtype") == "fp16" && in.text("optimizer.impl") != "fused") {
    out.push_back(
        {{"optimizer.impl", "optimizer", "stream"}, "fp16 needs the fused optimizer", "fused"});
  }
  if (in.on_this_machine && in.visible_gpus == 0) {
    out.push_back({{"stream"}, "graph needs a GPU", ""});
  }
  return out;
}

const FixedCatalog& checking_catalog() {
  static const FixedCatalog kCatalog = [] {
    std::vector<PluginInfo> all = test::real_plugins();
    PluginInfo graph = test::plugin("graph", PluginKind::kStreamStrategy);
    graph.check = graph_check;
    all.push_back(graph);
    return FixedCatalog(std::move(all));
  }();
  return kCatalog;
}

PlanOptions on_machine(int gpus) {
  PlanOptions o;
  o.machine = MachineFacts{gpus};
  return o;
}

PlanErrors plan_errors(const std::string& yaml, const PlanOptions& opts) {
  try {
    test::plan_text(yaml, opts, checking_catalog());
  } catch (const PlanErrors& e) {
    return e;
  }
  FAIL("expected PlanErrors for:\n" << yaml);
  throw std::logic_error("unreachable");
}

TEST_CASE("plan checks: every problem of every configuration is reported at once", "[plan]") {
  const std::string yaml = R"(name: many
base:
  batch_size: 1000000000
  precision: {plugin: amp, dtype: fp16}
matrix:
  device: [cpu, cuda]
  stream: [default, graph]
)";
  const PlanErrors e = plan_errors(yaml, on_machine(0));
  INFO(e.what());
  // The batch (shared by all four configurations: said once), the GPU device, and the graph's
  // two, in the order of the file.
  REQUIRE(e.errors.size() == 4);
  CHECK(e.errors[0].key_path == "base.batch_size");
  CHECK(e.errors[0].line == 3);
  CHECK(e.errors[0].col == 15);
  CHECK(e.errors[1].key_path == "matrix.device[1]");
  CHECK(e.errors[1].line == 6);
  CHECK(e.errors[1].col == 17);
  // Neither optimizer.impl nor optimizer is written: the next setting the plugin names is.
  CHECK(e.errors[2].key_path == "matrix.stream[1]");
  CHECK(e.errors[2].line == 7);
  CHECK(e.errors[2].col == 21);
  CHECK_THAT(e.errors[2].message, Catch::Contains("fp16 needs the fused optimizer"));
  CHECK(e.errors[3].key_path == "matrix.stream[1]");
  CHECK_THAT(e.errors[3].message, Catch::Contains("graph needs a GPU"));
  // The exception is its first problem, and what() lists them all, one per line.
  CHECK(e.line == 3);
  const std::string text = e.what();
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
  CHECK_THAT(text, Catch::StartsWith("test.yaml:3:15: base.batch_size: "));
  CHECK_THAT(text, Catch::Contains("\ntest.yaml:6:17: matrix.device[1]: 'cuda' needs a CUDA"));
}

TEST_CASE("plan checks: a plugin's problem is blamed where its setting was written", "[plan]") {
  const std::string yaml = R"(name: blame
base:
  stream: graph
  optimizer: {impl: foreach}
  precision: {plugin: amp, dtype: fp16}
)";
  const PlanErrors e = plan_errors(yaml, on_machine(1));
  REQUIRE(e.errors.size() == 1);
  CHECK(e.key_path == "base.optimizer.impl");
  CHECK(e.line == 4);
  CHECK(e.col == 21);
  CHECK(e.allowed == "fused");
  // Written right, it plans.
  CHECK(test::plan_text("name: ok\nbase:\n  stream: graph\n  optimizer: {impl: fused}\n"
                        "  precision: {plugin: amp, dtype: fp16}\n",
                        on_machine(1), checking_catalog())
            .runs.size() == 1);
}

TEST_CASE("plan checks: a problem the defaults cause is blamed on the configuration", "[plan]") {
  // No setting the check names is written (the check runs with every default in place).
  static const FixedCatalog kCatalog = [] {
    std::vector<PluginInfo> all = test::real_plugins();
    for (PluginInfo& p : all) {
      if (p.name == "default") {
        p.check = [](const PlanCheckInput&) {
          return std::vector<PlanProblem>{{{"stream.nothing"}, "refused by default", ""}};
        };
      }
    }
    return FixedCatalog(std::move(all));
  }();
  try {
    test::plan_text("name: defaults\nbase:\n  batch_size: 8\n", {}, kCatalog);
    FAIL("planned");
  } catch (const PlanErrors& e) {
    CHECK(e.key_path == "base");
    CHECK(e.line == 3);  // base's mapping starts there
    CHECK_THAT(e.message, Catch::Contains("refused by default (stream.nothing has its default"));
  }
}

TEST_CASE("plan checks: another machine's plan skips this machine's facts", "[plan]") {
  const std::string yaml = "name: elsewhere\nbase:\n  device: cuda:1\n  stream: graph\n";
  // A Slurm submission (no machine facts): a login node without a GPU does not refuse it.
  CHECK(test::plan_text(yaml, {}, checking_catalog()).runs.size() == 1);
  // Here, with two GPUs, cuda:1 is visible; with one it is not; with none nothing is.
  CHECK(test::plan_text(yaml, on_machine(2), checking_catalog()).runs.size() == 1);
  const PlanErrors one = plan_errors(yaml, on_machine(1));
  REQUIRE(one.errors.size() == 1);
  CHECK(one.key_path == "base.device");
  CHECK_THAT(one.message, Catch::Contains("'cuda:1' is not visible on this machine, which sees 1"));
  const PlanErrors none = plan_errors(yaml, on_machine(0));
  REQUIRE(none.errors.size() == 2);
  CHECK_THAT(none.errors[0].message, Catch::Contains("none is visible"));
  CHECK_THAT(none.errors[1].message, Catch::Contains("graph needs a GPU"));
  // device: auto and cpu never need one.
  CHECK(test::plan_text("name: cpu\nbase:\n  device: cpu\n", on_machine(0)).runs.size() == 1);
  CHECK(test::plan_text("name: auto\nbase: {}\n", on_machine(0)).runs.size() == 1);
}

TEST_CASE("plan checks: the largest batch is bounded by bytes, not by a count", "[plan]") {
  // 2^48 bytes of 3x224x224 floats is 467,479,433 images; smaller images allow more.
  CHECK(test::plan_text("name: b\nbase:\n  batch_size: 467479433\n").runs.size() == 1);
  CHECK_THAT(test::plan_failure("name: b\nbase:\n  batch_size: 467479434\n").message,
             Catch::Contains("more than 2^48 bytes"));
  CHECK(test::plan_text("name: b\nbase:\n  data: {plugin: synthetic, image_size: 8, channels: 1}\n"
                        "  batch_size: 1000000000\n")
            .runs.size() == 1);
  // The int64 limit is still refused, without overflowing on the way.
  CHECK_THAT(test::plan_failure("name: b\nbase:\n  batch_size: 9223372036854775807\n").message,
             Catch::Contains("more than 2^48 bytes"));
}

TEST_CASE("plan checks: the optimizer's numbers must be trainable in fp32", "[plan]") {
  auto lr = [](const std::string& v) { return "name: o\nbase:\n  optimizer: {lr: " + v + "}\n"; };
  // Huge but finite in fp32 still plans: such a run diverges, and is recorded so.
  CHECK(test::plan_text(lr("1e30")).runs.at(0).optimizer.lr == 1e30);
  CHECK(test::plan_text(lr("3.4e38")).runs.size() == 1);
  const PlanError e = test::plan_failure(lr("1e300"));
  CHECK(e.message ==
        "1e+300 is above the largest float (3.4e38): the first step would make "
        "every weight infinite");
  CHECK(e.key_path == "base.optimizer.lr");
  CHECK_THAT(test::plan_failure(lr(".inf")).message, Catch::Contains("expected a number"));
  CHECK_THAT(test::plan_failure(lr(".nan")).message, Catch::Contains("expected a number"));
  CHECK(test::plan_text("name: o\nbase:\n  optimizer: {momentum: 1}\n").runs.size() == 1);
  CHECK_THAT(test::plan_failure("name: o\nbase:\n  optimizer: {momentum: 1.01}\n").message,
             Catch::Contains("1.01 is above 1"));
  CHECK_THAT(test::plan_failure("name: o\nbase:\n  optimizer: {weight_decay: 1e39}\n").message,
             Catch::Contains("above the largest float"));
}

TEST_CASE("plan checks: a configuration as the settings a check reads", "[plan]") {
  const Plan p = test::plan_text(
      "name: s\nbase:\n  precision: {plugin: amp, dtype: fp16}\n  batch_size: auto\n");
  const auto s = configuration_settings(p.runs.at(0).config.json());
  CHECK(std::get<std::string>(s.at("precision")) == "amp");
  CHECK(std::get<std::string>(s.at("precision.dtype")) == "fp16");
  CHECK(std::get<double>(s.at("precision.init_scale")) == 65536.0);
  CHECK(std::get<std::string>(s.at("optimizer.impl")) == "foreach");
  CHECK(std::get<std::string>(s.at("device")) == "auto");
  CHECK(std::get<std::int64_t>(s.at("data.image_size")) == 224);
  CHECK(s.count("batch_size") == 0);  // auto: searched by the sweep
  PlanCheckInput in;
  in.settings = s;
  CHECK(in.text("precision.dtype") == "fp16");
  CHECK(in.text("no.such") == "");
}

}  // namespace
}  // namespace orch
