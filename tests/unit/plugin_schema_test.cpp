// A plugin's parameters said once (orch/params.h, plugins/*/*/schema.cpp): the param() builder,
// Params reading the schema's defaults, the shipped schemas' own consistency, the history
// fields driving the configuration hash, and needs_cuda checked by the host at plan time.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "docgen/plugin_markdown.h"
#include "plan/plan_checks.h"
#include "plan/plugin_params.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

std::vector<int> version_numbers(const std::string& v) {
  std::vector<int> out;
  std::stringstream ss(v);
  std::string part;
  while (std::getline(ss, part, '.')) out.push_back(std::stoi(part));
  return out;
}

bool value_allowed(const ParamSpec& s, const Value& v) {
  if (!s.allowed.empty() && std::find(s.allowed.begin(), s.allowed.end(), v) == s.allowed.end()) {
    return false;
  }
  double d = 0;
  if (auto* i = std::get_if<std::int64_t>(&v)) d = static_cast<double>(*i);
  if (auto* f = std::get_if<double>(&v)) d = *f;
  return (!s.min || d >= *s.min) && (!s.max || d <= *s.max);
}

TEST_CASE("schema: param() builds one parameter per line, values of the declared type",
          "[plan][schema]") {
  const ParamSpec depth =
      param("depth").integer().one_of({18, 50}).default_(50).doc("number of layers");
  CHECK(depth.name == "depth");
  CHECK(depth.type == ParamType::kInt);
  CHECK(depth.default_value == Value{std::int64_t{50}});
  CHECK(depth.allowed == std::vector<Value>{std::int64_t{18}, std::int64_t{50}});
  CHECK(depth.doc == "number of layers");
  CHECK_FALSE(depth.hash_exempt_at_default());
  // A number given an int literal is stored as a double, as the planner stores it.
  const ParamSpec share = param("share").number().min(0).max(1).default_(0);
  CHECK(share.default_value == Value{0.0});
  CHECK(*share.min == 0.0);
  CHECK(*share.max == 1.0);
  // Without default_(): the type's zero value.
  CHECK(ParamSpec(param("root").string()).default_value == Value{std::string()});
  CHECK(ParamSpec(param("on").boolean()).default_value == Value{false});
  // History as data: hash_exempt_since says since too; since alone leaves it hashed.
  const ParamSpec late = param("late").boolean().hash_exempt_since("1.2.0");
  CHECK(late.since == "1.2.0");
  CHECK(late.hash_exempt_at_default());
  const ParamSpec later = param("later").integer().since("1.3.0");
  CHECK(later.since == "1.3.0");
  CHECK_FALSE(later.hash_exempt_at_default());
  CHECK(ParamSpec(param("path").string().hash_file_content()).hash_file_content);
}

TEST_CASE("schema: Params reads a left-out parameter as the schema's default", "[plan][schema]") {
  const std::vector<ParamSpec> schema = {param("fused").boolean().default_(true),
                                         param("impl").string().default_("cudnn"),
                                         param("workers").integer().default_(4)};
  const Params hand_built({{"workers", std::int64_t{8}}});
  // Without the schema a left-out name is unknown; with it, the declared default.
  CHECK_FALSE(hand_built.has("fused"));
  CHECK_THROWS_AS(hand_built.get_bool("fused"), std::out_of_range);
  const Params p = hand_built.with_schema(schema);
  CHECK(p.has("fused"));
  CHECK(p.get_bool("fused"));
  CHECK(p.get_string("impl") == "cudnn");
  CHECK(p.get_int("workers") == 8);  // a value set wins over the default
  CHECK_THROWS_AS(p.get_int("nothing"), std::out_of_range);
  // The defaults are not values: a configuration shows what the planner set, nothing more.
  CHECK(p.values().size() == 1);
  // Each shipped plugin, built from nothing: every parameter reads its one declared default.
  for (const PluginInfo& info : test::real_plugins()) {
    const Params empty = Params().with_schema(info.params);
    const Params resolved = resolve_params(info, {});
    for (const ParamSpec& s : info.params) {
      INFO(info.name << "." << s.name);
      CHECK(empty.at(s.name) == resolved.at(s.name));
    }
  }
}

TEST_CASE("schema: each shipped plugin's declarations are consistent", "[plan][schema]") {
  const std::vector<PluginInfo> all = test::real_plugins();
  std::set<std::string> plugins;
  for (const PluginInfo& info : all) plugins.insert(info.name);
  CHECK(plugins == std::set<std::string>{"resnet", "torchscript", "synthetic", "imagefolder",
                                         "cached", "nvjpeg", "fp32", "tf32", "amp", "default",
                                         "copy-overlap", "cuda-graph", "multi-stream"});
  for (const PluginInfo& info : all) {
    std::set<std::string> names;
    for (const ParamSpec& s : info.params) {
      INFO(info.name << "." << s.name);
      CHECK(names.insert(s.name).second);
      // The one default is a value the planner would accept if a file wrote it.
      CHECK(type_of(s.default_value) == s.type);
      CHECK(value_allowed(s, s.default_value));
      // History names a version the plugin has reached; hash exemption implies since.
      for (const std::string& v : {s.since, s.hash_exempt_since}) {
        if (!v.empty()) CHECK(version_numbers(v) <= version_numbers(info.version));
      }
      if (s.hash_exempt_at_default()) CHECK(s.since == s.hash_exempt_since);
    }
  }
}

TEST_CASE("schema: a parameter hash-exempt since a version leaves older hashes alone",
          "[plan][schema][hash]") {
  // Written at its default or left out, every hash-exempt parameter of a shipped plugin gives
  // the configuration the hash it had before the parameter existed; set otherwise, a new one.
  const auto hash = [](const std::string& base) {
    return test::plan_text("name: x\nbase: " + base + "\n", {}, test::real_catalog()).runs[0].hash;
  };
  const PluginInfo* resnet = test::real_catalog().find(PluginKind::kModel, "resnet");
  REQUIRE(resnet != nullptr);
  const std::string omitted = hash("{model: resnet}");
  int exempt = 0;
  for (const ParamSpec& s : resnet->params) {
    if (!s.hash_exempt_at_default()) continue;
    ++exempt;
    INFO(s.name);
    CHECK(hash("{model: {plugin: resnet, " + s.name + ": " + to_string(s.default_value) + "}}") ==
          omitted);
    const Value other = s.allowed.empty()
                            ? Value{!std::get<bool>(s.default_value)}
                            : (s.allowed[0] == s.default_value ? s.allowed[1] : s.allowed[0]);
    CHECK(hash("{model: {plugin: resnet, " + s.name + ": " + to_string(other) + "}}") != omitted);
  }
  CHECK(exempt == 12);
  // depth is hashed: written at its default it changes nothing, set otherwise it does.
  CHECK(hash("{model: {plugin: resnet, depth: 50}}") == omitted);
  CHECK(hash("{model: {plugin: resnet, depth: 18}}") != omitted);
}

TEST_CASE("schema: docs/plugins.md's parameter tables are the shipped schemas",
          "[plan][schema][docgen]") {
  // What `orch plugins --markdown NAME` prints from the loaded plugin, here from the schemas
  // linked in: the declarations the plugins return are these (nvjpeg too, built or not).
  std::ifstream in(std::string(ORCH_SOURCE_DIR) + "/docs/plugins.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const PluginInfo& info : test::real_plugins()) {
    INFO(info.name);
    const std::string marker = "<!-- generated by orch plugins --markdown " + info.name + ": ";
    const auto begin = doc.find(marker + "begin -->\n");
    const auto end = doc.find(marker + "end -->");
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    const std::size_t from = begin + marker.size() + std::string("begin -->\n").size();
    // gen_docs.py's block: a blank line, the output without its final newlines, a blank line.
    std::string table = docgen::plugin_markdown(info);
    while (!table.empty() && table.back() == '\n') table.pop_back();
    CHECK(doc.substr(from, end - from) == "\n" + table + "\n\n");
  }
}

PlanErrors cuda_failure(const std::string& base, const PlanOptions& opts) {
  try {
    test::plan_text("name: x\nbase: " + base + "\n", opts, test::real_catalog());
  } catch (const PlanErrors& e) {
    return e;
  }
  FAIL("expected PlanErrors for " << base);
  throw std::logic_error("unreachable");
}

TEST_CASE("schema: needs_cuda, declared once, is the host's plan-time check", "[plan][schema]") {
  const PluginInfo* graph = test::real_catalog().find(PluginKind::kStreamStrategy, "cuda-graph");
  const PluginInfo* nvjpeg = test::real_catalog().find(PluginKind::kDataLoader, "nvjpeg");
  REQUIRE((graph && graph->needs_cuda && nvjpeg && nvjpeg->needs_cuda));
  CHECK_FALSE(test::real_catalog().find(PluginKind::kStreamStrategy, "default")->needs_cuda);
  // device: cpu, anywhere: blamed on the plugin's role, with the CPU's alternative.
  const PlanErrors cpu = cuda_failure("{device: cpu, stream: cuda-graph}", {});
  REQUIRE(cpu.errors.size() == 1);
  CHECK(cpu.errors[0].key_path == "base.stream");
  CHECK_THAT(cpu.errors[0].message,
             Catch::Contains("cuda-graph needs a CUDA device, and this configuration's device "
                             "is cpu"));
  CHECK_THAT(cpu.errors[0].allowed, Catch::Contains("stream: default"));
  PlanOptions no_gpu;
  no_gpu.machine = MachineFacts{0};
  const PlanErrors loader = cuda_failure("{data: {plugin: nvjpeg, root: /nowhere}}", no_gpu);
  CHECK_THAT(loader.what(), Catch::Contains("nvjpeg needs a CUDA device (it decodes on the GPU), "
                                            "and none is visible on this machine"));
  // device: auto with a GPU, or planned for another machine: no problem of the host's.
  PlanOptions one_gpu;
  one_gpu.machine = MachineFacts{1};
  CHECK(test::plan_text("name: x\nbase: {stream: cuda-graph}\n", one_gpu, test::real_catalog())
            .runs.size() == 1);
  CHECK(test::plan_text("name: x\nbase: {stream: cuda-graph}\n", {}, test::real_catalog())
            .runs.size() == 1);
}

}  // namespace
}  // namespace orch
