// `orch plugins --markdown`: parameter tables from PluginInfo, the declarations the planner
// validates against (the shipped plugins are checked against docs/plugins.md by "docs: generated
// tables match orch").
#include <catch2/catch.hpp>

#include "docgen/plugin_markdown.h"

namespace orch::docgen {
namespace {

PluginInfo loader() {
  PluginInfo p;
  p.name = "folder";
  p.kind = PluginKind::kDataLoader;
  p.version = "1.2.0";
  p.description = "images from <root>";
  p.params = {
      param("root").string().doc("the folder"),
      param("split")
          .string()
          .one_of({"train", "val"})
          .default_("train")
          .hash_exempt_since("1.1.0")
          .doc("which split."),
      param("workers").integer().min(0).max(256).doc("threads; 0: all"),
      param("classes").integer().min(1).default_(1000),
      param("share").number().min(0.05).max(1).default_(0.25).doc("a share a|b"),
      param("path").string().default_("m.pt").hash_file_content().doc("the archive"),
  };
  return p;
}

TEST_CASE("docgen: a plugin's parameters with type, default, allowed values, range and hashing",
          "[docgen][plugins]") {
  CHECK(plugin_markdown(loader()) ==
        "data plugin, version 1.2.0: images from &lt;root&gt;\n"
        "\n"
        "| parameter | type | default | allowed | meaning |\n"
        "|---|---|---|---|---|\n"
        "| `root` | string | `\"\"` | | the folder |\n"
        "| `split` | string | `train` | `train`, `val` | which split. Unhashed at default. |\n"
        "| `workers` | int | `0` | 0..256 | threads; 0: all |\n"
        "| `classes` | int | `1000` | 1.. | |\n"
        "| `share` | float | `0.25` | 0.05..1 | a share a\\|b |\n"
        "| `path` | string | `m.pt` | | the archive. The file's content is hashed too. |\n");
}

TEST_CASE("docgen: a plugin without parameters says so", "[docgen][plugins]") {
  PluginInfo p;
  p.name = "fp32";
  p.kind = PluginKind::kPrecision;
  p.version = "1.0.0";
  p.description = "float32 everywhere";
  CHECK(plugin_markdown(p) ==
        "precision plugin, version 1.0.0: float32 everywhere\n\nNo "
        "parameters.\n");
}

TEST_CASE("docgen: every plugin, kind by kind in the SDK's order, by name within a kind",
          "[docgen][plugins]") {
  PluginInfo model;
  model.name = "resnet";
  model.kind = PluginKind::kModel;
  PluginInfo stream;
  stream.name = "default";
  stream.kind = PluginKind::kStreamStrategy;
  PluginInfo cached = loader();
  cached.name = "cached";
  const std::string all = plugins_markdown({stream, loader(), model, cached});
  const auto at = [&all](const std::string& heading) { return all.find(heading); };
  REQUIRE(at("### `resnet` (model)\n\nmodel plugin") == 0);
  CHECK(at("### `resnet` (model)") < at("### `cached` (data)"));
  CHECK(at("### `cached` (data)") < at("### `folder` (data)"));
  CHECK(at("### `folder` (data)") < at("### `default` (stream)"));
  CHECK(at("### `default` (stream)") != std::string::npos);
}

}  // namespace
}  // namespace orch::docgen
