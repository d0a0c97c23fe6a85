// Plugin discovery, schemas, ABI refusal, broken libraries, and object lifetime.
#include <torch/torch.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "integration/test_support.h"
#include "plugin_host/plugin_error.h"

using namespace orch;
using Catch::Matchers::Contains;

TEST_CASE("the built plugins are found with their kinds and schemas", "[plugins]") {
  auto& reg = test::built_plugins();
  CHECK(reg.refused().empty());
  CHECK(reg.names(PluginKind::kModel) == std::vector<std::string>{"resnet", "torchscript"});
  CHECK(reg.names(PluginKind::kDataLoader) ==
        std::vector<std::string>{"cached", "imagefolder", "nvjpeg", "synthetic"});
  CHECK(reg.names(PluginKind::kPrecision) == std::vector<std::string>{"amp", "fp32", "tf32"});
  CHECK(reg.names(PluginKind::kStreamStrategy) ==
        std::vector<std::string>{"copy-overlap", "cuda-graph", "default", "multi-stream"});

  const PluginInfo* resnet = reg.find(PluginKind::kModel, "resnet");
  REQUIRE(resnet != nullptr);
  REQUIRE(resnet->params.size() == 13);
  const ParamSpec& depth = resnet->params[0];
  CHECK(depth.name == "depth");
  CHECK(depth.type == ParamType::kInt);
  CHECK(std::get<std::int64_t>(depth.default_value) == 50);
  CHECK(depth.allowed.size() == 5);
  CHECK(resnet->params[1].name == "fused_bn");
  CHECK(resnet->params[2].name == "fused_bn_impl");
  CHECK(resnet->params[3].name == "max_pool_impl");
  CHECK(resnet->params[4].name == "fused_residual_grad");
  CHECK(resnet->params[5].name == "downsample_bn_cudnn");
  CHECK(resnet->params[6].name == "stem_conv");
  CHECK(resnet->params[7].name == "conv_bn_stats");
  CHECK(resnet->params[8].name == "relu_mask");
  CHECK(resnet->params[9].name == "dgrad_graph");
  CHECK(resnet->params[10].name == "fused_downsample");
  CHECK(resnet->params[11].name == "fused_stem");
  CHECK(resnet->params[12].name == "wgrad_stream");
  CHECK(reg.find(PluginKind::kModel, "amp") == nullptr);  // names are per kind
}

TEST_CASE("a plugin built against another SDK version is refused with both versions named",
          "[plugins]") {
  PluginRegistry reg;
  const auto path = std::filesystem::path(ORCH_TEST_PLUGIN_DIR) / "libabi_mismatch.so";
  CHECK_FALSE(reg.load_file(path));
  REQUIRE(reg.refused().size() == 1);
  const std::string why = reg.refused()[0].reason;
  CHECK_THAT(why, Contains(path.string()));
  CHECK_THAT(why, Contains("SDK version 999"));
  CHECK_THAT(why, Contains("provides SDK version " + std::to_string(ORCH_SDK_VERSION)));
  CHECK(reg.plugins().empty());
}

TEST_CASE("a corrupt library is refused with its path and dlerror's text", "[plugins]") {
  const auto path = std::filesystem::path(ORCH_TEST_PLUGIN_DIR) / "libcorrupt.so";
  REQUIRE_THROWS_AS(load_plugin_library(path), PluginError);
  try {
    load_plugin_library(path);
  } catch (const PluginError& e) {
    CHECK_THAT(e.what(), Contains(path.string()));
    // glibc's words for a file that is not ELF: "invalid ELF header" or "file too short".
    const std::string what = e.what();
    CHECK((what.find("invalid ELF header") != std::string::npos ||
           what.find("file too short") != std::string::npos));
  }
}

// The dlopen probe that gets dlerror()'s text must hold its handle until Boost.DLL has opened
// the library too: closing it first unloads and reloads the library, so static constructors
// run twice and a plugin's CUDA kernels are registered, unregistered and registered again
// (after which they fail to launch: "named symbol not found"). The load probe runs them once
// more, in its child process, which is not this one.
TEST_CASE("loading a plugin library runs its static constructors once", "[plugins]") {
  test::TempDir tmp;
  const auto log = tmp.path() / "loads.txt";
  REQUIRE(::setenv("ORCH_TEST_LOAD_LOG", log.c_str(), 1) == 0);
  PluginRegistry reg;
  const bool loaded = reg.load_file(std::filesystem::path(ORCH_TEST_PLUGIN_DIR) / "libnot_orch.so");
  ::unsetenv("ORCH_TEST_LOAD_LOG");
  CHECK_FALSE(loaded);  // refused after it was loaded: not an orch plugin
  std::ifstream in(log);
  std::string line;
  int loads = 0, elsewhere = 0;
  const std::string here = "loaded " + std::to_string(::getpid());
  while (std::getline(in, line)) {
    loads += line == here;
    elsewhere += line.rfind("loaded ", 0) == 0 && line != here;
  }
  CHECK(loads == 1);
  CHECK(elsewhere == 1);  // the probe's child
}

TEST_CASE("a shared library without orch's exports is refused, a missing file named", "[plugins]") {
  PluginRegistry reg;
  CHECK_FALSE(reg.load_file(std::filesystem::path(ORCH_TEST_PLUGIN_DIR) / "libnot_orch.so"));
  CHECK_FALSE(reg.load_file("/nonexistent/libnothing.so"));
  REQUIRE(reg.refused().size() == 2);
  CHECK_THAT(reg.refused()[0].reason, Contains("not an orch plugin"));
  CHECK_THAT(reg.refused()[1].reason, Contains("/nonexistent/libnothing.so: no such file"));
}

TEST_CASE("loading the same plugin twice keeps the first and names both files", "[plugins]") {
  PluginRegistry reg;
  const auto dir = std::filesystem::path(ORCH_PLUGIN_BUILD_DIR);
  REQUIRE(reg.load_file(dir / "liborch_stream_default.so"));
  test::TempDir tmp;
  const auto copy = tmp.path() / "libcopy.so";
  std::filesystem::copy_file(dir / "liborch_stream_default.so", copy);
  CHECK_FALSE(reg.load_file(copy));
  REQUIRE(reg.refused().size() == 1);
  CHECK_THAT(reg.refused()[0].reason, Contains("duplicate stream plugin 'default'"));
  CHECK_THAT(reg.refused()[0].reason, Contains("liborch_stream_default.so"));
}

TEST_CASE("an object made by a plugin keeps its library loaded after the registry is gone",
          "[plugins]") {
  std::shared_ptr<Model> model;
  {
    PluginRegistry reg;
    reg.load_file(std::filesystem::path(ORCH_PLUGIN_BUILD_DIR) / "liborch_model_resnet.so");
    model =
        reg.create_model(test::choice("resnet", {{"depth", std::int64_t{18}}}), {10, {3, 32, 32}});
  }
  // The registry (and its handle on the library) is destroyed; the model's code must still be
  // mapped, or this call would crash.
  torch::NoGradGuard no_grad;
  model->module().eval();
  auto out = model->forward(torch::randn({2, 3, 32, 32}));
  CHECK(out.sizes() == torch::IntArrayRef({2, 10}));
}

TEST_CASE("creating an unknown plugin names the kind and the known ones", "[plugins]") {
  auto& reg = test::built_plugins();
  REQUIRE_THROWS_WITH(reg.create_precision(test::choice("fp64"), {}),
                      Contains("no precision plugin named 'fp64' (known: amp, fp32, tf32)"));
}
