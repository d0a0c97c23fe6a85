// The configuration hash: the same configuration always hashes the same, however it is
// written; any change to what is measured changes it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "plan/config_hash.h"
#include "plan/content_hash.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using test::plan_text;

std::string hash_of(const std::string& yaml) {
  Plan p = plan_text(yaml);
  REQUIRE(p.runs.size() >= 1);
  return p.runs[0].hash;
}

const char* const kBaseline = R"(
name: baseline
base:
  model: {plugin: resnet, depth: 101}
  precision: {plugin: amp, dtype: bf16}
  batch_size: 128
  memory_format: channels_last
  cudnn_benchmark: on
  optimizer: {lr: 0.05}
)";

TEST_CASE("hash: 32 lowercase hex digits", "[plan][hash]") {
  CHECK(std::regex_match(hash_of(kBaseline), std::regex("[0-9a-f]{32}")));
}

TEST_CASE("hash: how the configuration is written does not matter", "[plan][hash]") {
  const std::string baseline = hash_of(kBaseline);
  auto same = GENERATE(
      // keys reordered, at every level
      std::string(R"(
base:
  optimizer: {lr: 0.05}
  cudnn_benchmark: on
  memory_format: channels_last
  batch_size: 128
  precision: {dtype: bf16, plugin: amp}
  model: {depth: 101, plugin: resnet}
name: baseline
)"),
      // block style, comments, different spacing and quoting
      std::string(R"(
# a comment
name:   baseline
base:
  model:
    plugin: "resnet"
    depth:  101      # deep
  precision:
    plugin: amp
    dtype: 'bf16'
  batch_size: 128
  memory_format: "channels_last"
  cudnn_benchmark: "on"
  optimizer:
    lr: 5e-2
)"),
      // defaults written out explicitly
      std::string(R"(
name: baseline
base:
  model: {plugin: resnet, depth: 101}
  data: {plugin: synthetic, image_size: 224, channels: 3, classes: 1000, batches: 4}
  precision: {plugin: amp, dtype: bf16}
  stream: default
  batch_size: 128
  memory_format: channels_last
  cudnn_benchmark: true
  optimizer: {name: sgd, lr: 0.05, momentum: 0.9, weight_decay: 0.0001}
  steps: {warmup: 10, measure: 50}
  device: auto
  seed: 0
)"),
      // amp by name alone (bf16 is its default); model without `plugin` (resnet is the default)
      std::string(R"(
name: baseline
base:
  model: {depth: 101}
  precision: amp
  batch_size: 128
  memory_format: channels_last
  cudnn_benchmark: yes
  optimizer: {lr: 0.050}
)"),
      // what is not measured: repeat, timeout, the experiment's name and description
      std::string(R"(
name: another-experiment
description: same configuration, different bookkeeping
base:
  model: {plugin: resnet, depth: 101}
  precision: {plugin: amp, dtype: bf16}
  batch_size: 128
  memory_format: channels_last
  cudnn_benchmark: on
  optimizer: {lr: 0.05}
  repeat: 3
  timeout: 5m
)"),
      // the same values reached through a matrix and an include instead of base
      std::string(R"(
name: baseline
base:
  model: {plugin: resnet, depth: 101}
  batch_size: 128
  optimizer: {lr: 0.05}
matrix:
  precision: [amp]
  memory_format: [channels_last]
  include:
    - {cudnn_benchmark: on}
)"));
  CHECK(hash_of(same) == baseline);
}

TEST_CASE("hash: every change to what is measured changes it", "[plan][hash]") {
  const std::vector<std::pair<std::string, std::string>> changes = {
      {"model: {plugin: resnet, depth: 101}", "model: {plugin: resnet, depth: 50}"},
      {"model: {plugin: resnet, depth: 101}", "model: toy"},
      {"precision: {plugin: amp, dtype: bf16}", "precision: {plugin: amp, dtype: fp16}"},
      {"precision: {plugin: amp, dtype: bf16}", "precision: fp32"},
      {"batch_size: 128", "batch_size: 129"},
      {"batch_size: 128", "batch_size: auto"},
      {"memory_format: channels_last", "memory_format: contiguous"},
      {"cudnn_benchmark: on", "cudnn_benchmark: off"},
      {"cudnn_benchmark: on", "cudnn_benchmark: auto"},
      {"optimizer: {lr: 0.05}", "optimizer: {lr: 0.051}"},
      {"optimizer: {lr: 0.05}", "optimizer: {lr: 0.05, momentum: 0.8}"},
      {"optimizer: {lr: 0.05}", "optimizer: {lr: 0.05, weight_decay: 0}"},
      {"optimizer: {lr: 0.05}", "optimizer: {lr: 0.05}\n  steps: {warmup: 11}"},
      {"optimizer: {lr: 0.05}", "optimizer: {lr: 0.05}\n  steps: {measure: 51}"},
      {"optimizer: {lr: 0.05}", "optimizer: {lr: 0.05}\n  data: {image_size: 225}"},
      {"optimizer: {lr: 0.05}", "optimizer: {lr: 0.05}\n  data: {batches: 5}"},
      {"optimizer: {lr: 0.05}", "optimizer: {lr: 0.05}\n  stream: multi"},
      {"optimizer: {lr: 0.05}", "optimizer: {lr: 0.05}\n  device: cpu"},
      {"optimizer: {lr: 0.05}", "optimizer: {lr: 0.05}\n  seed: 1"},
  };
  std::set<std::string> seen = {hash_of(kBaseline)};
  for (const auto& [from, to] : changes) {
    std::string yaml = kBaseline;
    auto at = yaml.find(from);
    REQUIRE(at != std::string::npos);
    yaml.replace(at, from.size(), to);
    INFO(to);
    CHECK(seen.insert(hash_of(yaml)).second);  // different from the baseline and each other
  }
}

TEST_CASE("hash: computed from the config without repeat and timeout", "[plan][hash]") {
  Plan p = plan_text("name: x\nbase:\n  repeat: 2\n  timeout: 10m\n");
  const RunSpec& r = p.runs[0];
  CHECK(r.config.json()["repeat"] == 2);
  CHECK(r.config.json()["timeout"] == 600.0);
  nlohmann::json in = hash_input(r.config.json());
  CHECK_FALSE(in.contains("repeat"));
  CHECK_FALSE(in.contains("timeout"));
  CHECK(in.contains("batch_size"));
  // resnet's parameters after depth, and synthetic's delay_ms, are declared hash_exempt_since a
  // version: at their defaults they are left out, which only the plugins' declarations can tell
  // (resolve_run passes their pointers).
  std::vector<nlohmann::json::json_pointer> unhashed;
  for (const char* role : {"model", "data"}) {
    const std::string plugin = r.config.json()[role]["plugin"];
    const PluginKind kind =
        std::string(role) == "model" ? PluginKind::kModel : PluginKind::kDataLoader;
    for (const ParamSpec& s : test::test_catalog().find(kind, plugin)->params) {
      if (s.hash_exempt_at_default())
        unhashed.emplace_back("/" + std::string(role) + "/params/" + s.name);
    }
  }
  CHECK(unhashed.size() == 13);  // resnet's 12 and synthetic's delay_ms
  CHECK(config_hash(r.config.json(), unhashed) == r.hash);
  CHECK(config_hash(in, unhashed) == r.hash);
  CHECK(config_hash(r.config.json()) != r.hash);
}

TEST_CASE("hash: the all-defaults configuration has a fixed hash", "[plan][hash]") {
  // Pinned on purpose: stored results are keyed by this hash. If this fails, the canonical
  // configuration changed, and every stored hash changes with it.
  Plan p = plan_text("name: defaults\n", {}, test::real_catalog());
  CHECK(
      p.runs[0].config.text() ==
      R"({"batch_size":64,"cuda_connections":"driver","cudnn_benchmark":"auto","data":{"params":{"batches":4,"channels":3,)"
      R"("classes":1000,"delay_ms":0.0,"image_size":224,"location":"device"},"plugin":"synthetic"},)"
      R"("device":"auto","isolation":"worker","memory_format":"contiguous","model":{"params":{)"
      R"("conv_bn_stats":false,"depth":50,"dgrad_graph":"off","downsample_bn_cudnn":true,"fused_bn":false,)"
      R"("fused_bn_impl":"cudnn","fused_downsample":false,"fused_residual_grad":true,"fused_stem":false,)"
      R"("max_pool_impl":"orch","relu_mask":true,"stem_conv":"auto","wgrad_stream":false},)"
      R"("plugin":"resnet"},)"
      R"("optimizer":{"impl":"foreach","lr":0.1,"momentum":0.9,"name":"sgd",)"
      R"("weight_decay":0.0001},"precision":{"params":{},"plugin":"fp32"},"profile":{"steps":0},)"
      R"("repeat":1,"seed":0,)"
      R"("steps":{"measure":50,"warmup":10},"stream":{"params":{},"plugin":"default"},)"
      R"("telemetry":{"enabled":true,"interval_ms":100},"timeout":1800.0})");
  // XXH3-128 of that JSON without "repeat", "timeout", the default "telemetry", "profile",
  // "cuda_connections" and "isolation", and every plugin parameter declared hash_exempt_since
  // at its default (resnet's after depth, synthetic's delay_ms): checked against libxxhash,
  // unchanged since before any of them existed.
  CHECK(p.runs[0].hash == "8b922a3df0c97eb438ad02254c052273");
}

TEST_CASE("hash: resnet's fused_bn_impl at its default (cudnn) keeps the hashes", "[plan][hash]") {
  const auto hash = [](const std::string& model) {
    Plan p = test::plan_text("name: x\nbase:\n  model: " + model + "\n", {}, test::real_catalog());
    return p.runs[0].hash;
  };
  // The default moved from orch to cudnn (measured faster); the key stays out of the hash at
  // the default, so fused_bn configurations hash as they did before the key existed.
  const std::string fused = hash("{plugin: resnet, fused_bn: true}");
  CHECK(hash("{plugin: resnet, fused_bn: true, fused_bn_impl: cudnn}") == fused);
  CHECK(hash("{plugin: resnet, fused_bn: true, fused_bn_impl: orch}") != fused);
  CHECK(hash("{plugin: resnet}") == hash("{plugin: resnet, fused_bn_impl: cudnn}"));
}

TEST_CASE("hash: resnet's max_pool_impl and fused_residual_grad at their defaults keep the hashes",
          "[plan][hash]") {
  const auto hash = [](const std::string& model) {
    Plan p = test::plan_text("name: x\nbase:\n  model: " + model + "\n", {}, test::real_catalog());
    return p.runs[0].hash;
  };
  CHECK(hash("{plugin: resnet, max_pool_impl: orch}") == hash("{plugin: resnet}"));
  CHECK(hash("{plugin: resnet, max_pool_impl: aten}") != hash("{plugin: resnet}"));
  // fused_residual_grad's default moved from false to true (measured faster); at the default
  // it stays out of the hash, off it is hashed.
  CHECK(hash("{plugin: resnet, fused_residual_grad: true}") == hash("{plugin: resnet}"));
  CHECK(hash("{plugin: resnet, fused_bn: true, fused_residual_grad: true}") ==
        hash("{plugin: resnet, fused_bn: true}"));
  CHECK(hash("{plugin: resnet, fused_bn: true, fused_residual_grad: false}") !=
        hash("{plugin: resnet, fused_bn: true}"));
}

TEST_CASE("hash: a parameter added later leaves the hash alone at its default", "[plan][hash]") {
  // The same plugin before and after it gained `fused` (hash_exempt_since) and `width2`
  // (an ordinary later parameter, hashed like any other).
  using test::int_param;
  using test::plugin;
  const auto catalog = [](bool later, bool ordinary) {
    std::vector<ParamSpec> params = {int_param("width", 8, {}, 1, 64)};
    if (later)
      params.push_back(param("fused").boolean().default_(false).hash_exempt_since("1.1.0"));
    if (ordinary)
      params.push_back(param("width2").integer().min(1).max(64).default_(4).since("1.2.0"));
    std::vector<PluginInfo> all = test::real_plugins();
    all.push_back(plugin("toy", PluginKind::kModel, params));
    return FixedCatalog(std::move(all));
  };
  const FixedCatalog before = catalog(false, false), after = catalog(true, false),
                     both = catalog(true, true);
  const auto hash = [](const std::string& model, const SchemaCatalog& c) {
    Plan p = test::plan_text("name: x\nbase:\n  model: " + model + "\n", {}, c);
    return p.runs[0].hash;
  };
  const std::string old_hash = hash("{plugin: toy, width: 16}", before);
  // Omitted or written at its default: the configuration keeps the hash it had before.
  CHECK(hash("{plugin: toy, width: 16}", after) == old_hash);
  CHECK(hash("{plugin: toy, width: 16, fused: false}", after) == old_hash);
  // Set otherwise, it is a different configuration.
  CHECK(hash("{plugin: toy, width: 16, fused: true}", after) != old_hash);
  // An ordinary parameter added later is hashed even at its default (the rule is opt-in).
  CHECK(hash("{plugin: toy, width: 16}", both) != old_hash);
  // The stored configuration still shows the value, default or not.
  Plan p = test::plan_text("name: x\nbase:\n  model: {plugin: toy}\n", {}, after);
  CHECK(p.runs[0].config.json()["model"]["params"]["fused"] == false);
}

TEST_CASE(
    "hash: a parameter declared hash_file_content hashes the file's bytes, not its path alone",
    "[plan][hash]") {
  // A plugin like torchscript: `path` names an archive that can be rewritten in place.
  ParamSpec path_param;
  path_param.name = "path";
  path_param.type = ParamType::kString;
  path_param.default_value = std::string("");
  path_param.hash_file_content = true;
  std::vector<PluginInfo> all = test::real_plugins();
  all.push_back(test::plugin("archive", PluginKind::kModel, {path_param}));
  const FixedCatalog catalog(std::move(all));
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("orch-hash-file-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "model.pt").string();
  const auto plan_of = [&](const std::string& path) {
    return test::plan_text("name: x\nbase:\n  model: {plugin: archive, path: '" + path + "'}\n", {},
                           catalog)
        .runs[0];
  };
  std::ofstream(file) << "first export";
  const RunSpec first = plan_of(file);
  REQUIRE(first.config.json()["model"].contains("content_xxh128"));
  CHECK(first.config.json()["model"]["content_xxh128"]["path"] == content_hash_hex("first export"));
  // The same bytes: the same configuration, planned again.
  CHECK(plan_of(file).hash == first.hash);
  // Rewritten at the same path: a new configuration.
  std::ofstream(file) << "second export";
  const RunSpec second = plan_of(file);
  CHECK(second.hash != first.hash);
  CHECK(second.config.json()["model"]["params"]["path"] == file);
  // A file that is not there (planned elsewhere) adds nothing; its path is still hashed.
  const RunSpec missing = plan_of((dir / "elsewhere.pt").string());
  CHECK_FALSE(missing.config.json()["model"].contains("content_xxh128"));
  CHECK(missing.hash != first.hash);
  // The digest is only for parameters that ask for it: the plugin's other configurations and
  // every built-in plugin plan as before (no content_xxh128 key).
  CHECK_FALSE(test::plan_text("name: x\nbase: {}\n")
                  .runs[0]
                  .config.json()["model"]
                  .contains("content_xxh128"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace orch
