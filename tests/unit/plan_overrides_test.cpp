// Command-line overrides: applied to base, pinning matrix axes, and errors that point into the
// override text as <override>:1:col.
#include <catch2/catch.hpp>

#include "plan/overrides.h"
#include "plan/planner.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using test::plan_failure;
using test::plan_text;

PlanOptions with(std::vector<std::string> overrides) { return PlanOptions{overrides, 10000}; }

const char* const kSweep = R"(
name: sweep
base:
  precision: {plugin: amp, dtype: bf16}
  batch_size: 64
matrix:
  memory_format: [contiguous, channels_last]
  batch_size: [128, 256]
  exclude:
    - {memory_format: channels_last, batch_size: 128}
)";

TEST_CASE("overrides: a key that is not an axis is applied to base", "[plan][overrides]") {
  Plan p = plan_text(kSweep, with({"seed=7", "precision.dtype=fp16", "steps.measure=5"}));
  REQUIRE(p.runs.size() == 3);
  for (const RunSpec& r : p.runs) {
    CHECK(r.seed == 7);
    CHECK(r.precision.params.get_string("dtype") == "fp16");
    CHECK(r.measure_steps == 5);
  }
}

TEST_CASE("overrides: YAML values, including mappings", "[plan][overrides]") {
  Plan p = plan_text("name: x\n",
                     with({"precision={plugin: amp, dtype: fp16}", "model={plugin: toy, width: 4}",
                           "cudnn_benchmark=on", "timeout=2h", "batch_size=auto"}));
  const RunSpec& r = p.runs.at(0);
  CHECK(r.precision.plugin == "amp");
  CHECK(r.precision.params.get_string("dtype") == "fp16");
  CHECK(r.model.plugin == "toy");
  CHECK(r.model.params.get_int("width") == 4);
  CHECK(r.cudnn_benchmark == "on");
  CHECK(r.timeout_s == 7200);
  CHECK_FALSE(r.batch_size.has_value());
}

TEST_CASE("overrides: applied in order, later wins", "[plan][overrides]") {
  Plan p = plan_text("name: x\n", with({"seed=1", "seed=2", "precision=amp", "precision=fp32"}));
  CHECK(p.runs[0].seed == 2);
  CHECK(p.runs[0].precision.plugin == "fp32");
}

TEST_CASE("overrides: an axis key pins the axis", "[plan][overrides]") {
  SECTION("to one value") {
    Plan p = plan_text(kSweep, with({"memory_format=channels_last"}));
    REQUIRE(p.runs.size() == 1);  // channels_last x 128 is excluded
    CHECK(p.runs[0].memory_format == "channels_last");
    CHECK(p.runs[0].batch_size == 256);
    CHECK(p.axes == std::vector<std::string>{"memory_format", "batch_size"});
  }
  SECTION("to a list of values") {
    Plan p = plan_text(kSweep, with({"batch_size=[32, 128, 512]"}));
    REQUIRE(p.runs.size() == 5);
    std::vector<std::int64_t> sizes;
    for (const RunSpec& r : p.runs) sizes.push_back(*r.batch_size);
    CHECK(sizes == std::vector<std::int64_t>{32, 128, 512, 32, 512});
  }
  SECTION("an exclude on a pinned axis may then match nothing") {
    Plan p = plan_text(kSweep, with({"batch_size=256"}));
    CHECK(p.runs.size() == 2);
  }
  SECTION("base is untouched: the axis, not base, carries the value") {
    Plan p = plan_text(kSweep, with({"batch_size=512"}));
    for (const RunSpec& r : p.runs) CHECK(r.batch_size == 512);
    CHECK(p.runs[0].name == "contiguous");  // batch_size no longer differs
  }
}

TEST_CASE("overrides: a key under a matrix path is applied after the matrix values",
          "[plan][overrides]") {
  const std::string yaml = R"(
name: under
matrix:
  model: [resnet, {plugin: resnet, depth: 18}]
  batch_size: [64, 128]
  include:
    - {batch_size: 128, data: {plugin: synthetic, channels: 1}}
)";
  Plan p = plan_text(yaml, with({"data.image_size=64", "seed=3"}));
  REQUIRE(p.runs.size() == 4);
  for (const RunSpec& r : p.runs) {
    CHECK(r.data.params.get_int("image_size") == 64);  // not replaced by the include's `data`
    CHECK(r.seed == 3);
  }
  CHECK(p.runs[1].data.params.get_int("channels") == 1);

  // Applied after the matrix, so it wins over the axis value, and may make configurations
  // identical, which is reported.
  PlanError e = plan_failure(yaml, with({"model.depth=101"}));
  CHECK_THAT(e.message, Catch::Contains("resolve to the same configuration"));
}

TEST_CASE("overrides: repeat can be overridden", "[plan][overrides]") {
  Plan p = plan_text(kSweep, with({"repeat=2"}));
  CHECK(p.runs.size() == 6);
}

TEST_CASE("overrides: parse_override splits key and value", "[plan][overrides]") {
  Override o = parse_override("  precision.dtype = bf16");
  CHECK(o.path.text == "precision.dtype");
  CHECK(o.path.key->name == "precision");
  CHECK(o.path.sub == "dtype");
  CHECK(o.value.text == "bf16");
  CHECK(o.value.mark.line == 1);
  CHECK(o.value.mark.col == 21);
  CHECK(o.value.mark.file_name() == "<override>");
  Override eq = parse_override("data={plugin: synthetic, image_size: 64}");
  CHECK(eq.path.text == "data");
  CHECK(eq.value.is_mapping());
}

TEST_CASE("overrides: errors point into the override", "[plan][overrides]") {
  struct Case {
    std::string base;  // the experiment
    std::string override_text;
    int col;
    std::string key_path;
    std::string message;
  };
  const std::string plain = "name: x\n";
  const std::string amp = "name: x\nbase:\n  precision: amp\n";
  const std::string axis = "name: x\nmatrix:\n  memory_format: [contiguous]\n";
  auto c = GENERATE_COPY(
      Case{plain, "batch_size=abc", 12, "batch_size",
           "expected a positive int, auto or auto-largest"},
      Case{plain, "batchsize=5", 1, "batchsize", "did you mean 'batch_size'?"},
      Case{plain, "  batch_size = big", 16, "batch_size", "got 'big'"},
      Case{plain, "no_equals_sign", 1, "no_equals_sign", "must look like key=value"},
      Case{plain, "=5", 1, "", "needs a key"},
      Case{amp, "precision.dtype=fp8", 17, "precision.dtype", "fp8 is not an allowed value"},
      Case{plain, "precision.dtype=bf16", 17, "precision.dtype", "'fp32' takes no parameters"},
      Case{plain, "model.depth.x=1", 1, "model.depth.x", "nested too deeply"},
      Case{plain, "batch_size=[1, 2", 12, "batch_size", "YAML syntax error"},
      Case{plain, "name=other", 1, "name", "unknown key 'name'"},
      Case{axis, "memory_format=[contiguous, channel_last]", 28, "memory_format[1]",
           "did you mean 'channels_last'?"},
      Case{plain, "optimizer.lr=-1", 14, "optimizer.lr", "out of range"});
  PlanError e = plan_failure(c.base, with({c.override_text}));
  CHECK(e.file == "<override>");
  CHECK(e.line == 1);
  CHECK(e.col == c.col);
  CHECK(e.key_path == c.key_path);
  CHECK_THAT(e.message, Catch::Contains(c.message));
}

}  // namespace
}  // namespace orch
