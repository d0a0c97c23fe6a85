// The nvjpeg loader on a machine without a GPU: it is built, loads and declares its
// parameters like any loader, and a CPU run is refused with a sentence that names the CPU
// alternative, before any data is touched. (Its decoding runs in tests/gpu/nvjpeg_gpu_test.cpp.)
#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "integration/test_support.h"
#include "plan/plugin_params.h"

using namespace orch;
using Catch::Matchers::Contains;

TEST_CASE("nvjpeg: declared like the other folder loaders, refused on the CPU",
          "[loader][nvjpeg]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kDataLoader, "nvjpeg");
  REQUIRE(info != nullptr);
  std::set<std::string> names;
  for (const auto& p : info->params) names.insert(p.name);
  CHECK(names == std::set<std::string>{"root", "backend", "workers", "prefetch", "decoders",
                                       "allocator", "output", "hw_pipeline", "hw_preallocate",
                                       "cpu_share", "shuffle", "drop_last", "image_size",
                                       "on_error", "split"});
  // Added after the first nvjpeg results: left out of the hash at their defaults, so those
  // results keep their configuration hashes.
  for (const auto& p : info->params) {
    INFO(p.name);
    CHECK(!p.hash_exempt_at_default() ==
          (p.name != "decoders" && p.name != "allocator" && p.name != "output" &&
           p.name != "hw_pipeline" && p.name != "hw_preallocate" && p.name != "cpu_share" &&
           p.name != "split"));
  }
  // output: rgb by default.
  CHECK(resolve_params(*info, {{"root", std::string("/d")}}).get_string("output") == "rgb");
  // hw_pipeline: off by default (faster under training; the reason is in plugin.cpp).
  CHECK_FALSE(resolve_params(*info, {{"root", std::string("/d")}}).get_bool("hw_pipeline"));
  // hw_preallocate: on by default (faster under training; the reason is in plugin.cpp).
  CHECK(resolve_params(*info, {{"root", std::string("/d")}}).get_bool("hw_preallocate"));
  // A bad backend is a plan-time error at its place in the file, listing the allowed values.
  test::TempDir tmp;
  std::ofstream(tmp.path() / "x.yaml")
      << "name: x\nbase:\n  data: {plugin: nvjpeg, root: /d, backend: cpu}\n";
  const auto plan = test::run_orch("plan '" + (tmp.path() / "x.yaml").string() + "'");
  CHECK(plan.exit_code == 2);
  CHECK_THAT(plan.output, Contains("x.yaml:3:") && Contains("backend") && Contains("hardware"));
  // So is an output other than rgb and yuv.
  std::ofstream(tmp.path() / "y.yaml")
      << "name: y\nbase:\n  data: {plugin: nvjpeg, root: /d, output: bgr}\n";
  const auto bad_output = test::run_orch("plan '" + (tmp.path() / "y.yaml").string() + "'");
  CHECK(bad_output.exit_code == 2);
  CHECK_THAT(bad_output.output, Contains("y.yaml:3:") && Contains("output") && Contains("yuv"));
  // cpu_share is a share: 0 (the default, all on the GPU) to 1, checked where it is written.
  CHECK(resolve_params(*info, {{"root", std::string("/d")}}).get_float("cpu_share") == 0.0);
  std::ofstream(tmp.path() / "z.yaml")
      << "name: z\nbase:\n  data: {plugin: nvjpeg, root: /d, cpu_share: 1.5}\n";
  const auto bad_share = test::run_orch("plan '" + (tmp.path() / "z.yaml").string() + "'");
  CHECK(bad_share.exit_code == 2);
  CHECK_THAT(bad_share.output, Contains("z.yaml:3:") && Contains("cpu_share") && Contains("1"));
  // The folder does not even exist: the device check comes first, and says what to use instead.
  const PluginChoice choice{"nvjpeg",
                            resolve_params(*info, {{"root", std::string("/nonexistent")}})};
  CHECK_THROWS_WITH(test::built_plugins().create_loader(choice, {8, torch::kCPU, 0, false}),
                    Contains("decodes on the GPU") && Contains("imagefolder"));
}
