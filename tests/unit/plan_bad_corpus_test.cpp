// The bad-input corpus: every file in tests/fixtures/bad must be refused with a PlanError at
// exactly the listed line and column, with the listed words in its message.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

struct BadFile {
  const char* file;
  int line, col;
  const char* key_path;  // PlanError::key_path, exactly
  const char* message;   // a substring of PlanError::message
};

// clang-format off
const BadFile kBadFiles[] = {
    {"alias-bomb.yaml", 2, 50, "a4[7][8][8][8][8]",
     R"(more than 100000 nodes)"},
    {"alias-cycle.yaml", 3, 10, "base.model.self",
     R"(refers to a node that contains it)"},
    {"bad-batch-size.yaml", 3, 15, "base.batch_size",
     R"(batch size must be positive)"},
    {"batch-beyond-any-device.yaml", 4, 15, "base.batch_size",
     R"(needs more than 2^48 bytes (256 TiB))"},
    {"bad-cudnn-benchmark.yaml", 3, 20, "base.cudnn_benchmark",
     R"(unknown value 'sometimes')"},
    {"bad-cuda-connections.yaml", 3, 21, "base.cuda_connections",
     R"(64 is out of range)"},
    {"bad-device.yaml", 3, 11, "base.device",
     R"(unknown device 'gpu')"},
    {"bad-memory-format.yaml", 3, 18, "base.memory_format",
     R"(did you mean 'channels_last'?)"},
    {"bad-name.yaml", 1, 7, "name",
     R"(got 'my experiment')"},
    {"bad-timeout.yaml", 3, 12, "base.timeout",
     R"(got '30 minutes')"},
    {"base-key-at-top-level.yaml", 2, 1, "batch_size",
     R"(belongs under 'base:')"},
    {"base-not-a-mapping.yaml", 2, 7, "base",
     R"(expected a mapping, got a list)"},
    {"device-cuda-without-gpu.yaml", 6, 17, "matrix.device[1]",
     R"('cuda' needs a CUDA device, and none is visible on this machine)"},
    {"deep-nesting.yaml", 2, 78, "description[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][...",
     R"(deeper than 64 levels)"},
    {"duplicate-key.yaml", 5, 3, "base.batch_size",
     R"(duplicate key 'batch_size')"},
    {"empty.yaml", 1, 1, "",
     R"(the experiment file is empty)"},
    {"exclude-everything.yaml", 2, 1, "matrix",
     R"(exclude removes every combination)"},
    {"exclude-matches-nothing.yaml", 6, 7, "matrix.exclude[0]",
     R"((precision: amp, batch_size: 256) matches nothing)"},
    {"exclude-not-an-axis.yaml", 6, 7, "matrix.exclude[0].memory_format",
     R"('memory_format' is not a matrix axis)"},
    {"include-empty-entry.yaml", 5, 7, "matrix.include[0]",
     R"(include entry cannot be empty)"},
    {"include-not-a-mapping.yaml", 5, 7, "matrix.include[0]",
     R"(expected a mapping of axis: value, got 'amp')"},
    {"lr-above-float.yaml", 3, 32, "base.optimizer.lr",
     R"(is above the largest float (3.4e38))"},
    {"matrix-axis-not-a-list.yaml", 3, 15, "matrix.batch_size",
     R"(expected a list of values)"},
    {"matrix-bad-plugin-value.yaml", 5, 28, "matrix.precision[1].dtype",
     R"(fp8 is not an allowed value)"},
    {"matrix-duplicate-value.yaml", 4, 20, "matrix.precision[1]",
     R"(the same value as matrix.precision[0])"},
    {"matrix-empty-axis.yaml", 4, 15, "matrix.batch_size",
     R"(at least one value)"},
    {"matrix-empty.yaml", 4, 1, "matrix",
     R"(the matrix is empty)"},
    {"matrix-param-of-wrong-plugin.yaml", 5, 21, "matrix.precision.dtype[0]",
     R"(plugin 'fp32' takes no parameters)"},
    {"matrix-repeat-axis.yaml", 3, 3, "matrix.repeat",
     R"('repeat' cannot vary between configurations)"},
    {"matrix-same-configuration.yaml", 3, 1, "matrix",
     R"(resolve to the same configuration)"},
    {"matrix-unknown-axis.yaml", 3, 3, "matrix.precison",
     R"(did you mean 'precision'?)"},
    {"missing-name.yaml", 1, 1, "name",
     R"(missing required key 'name')"},
    {"momentum-above-one.yaml", 5, 29, "matrix.optimizer.momentum[1]",
     R"(1.5 is above 1: the momentum buffer would grow without bound)"},
    {"multiple-documents.yaml", 3, 1, "",
     R"(expected one YAML document, found 2)"},
    {"not-a-mapping.yaml", 1, 1, "",
     R"(got a list)"},
    {"optimizer-unknown-field.yaml", 5, 5, "base.optimizer.momentun",
     R"(did you mean 'momentum'?)"},
    {"param-above-max.yaml", 3, 41, "base.data.image_size",
     R"(2048 is above the maximum 1024)"},
    {"param-not-allowed.yaml", 3, 34, "base.model.depth",
     R"(20 is not an allowed value)"},
    {"param-wrong-type.yaml", 5, 17, "base.data.image_size",
     R"(expected an int, got 'large')"},
    {"plugin-takes-no-params.yaml", 3, 15, "base.precision.dtype",
     R"(plugin 'fp32' takes no parameters)"},
    {"profile-steps-above-max.yaml", 3, 26, "matrix.profile.steps[2]",
     R"(5000 is above the maximum 100)"},
    {"profile-unknown-field.yaml", 5, 5, "base.profile.trace",
     R"(unknown key 'trace')"},
    {"repeat-zero.yaml", 3, 11, "base.repeat",
     R"(0 is below the minimum 1)"},
    {"several-problems.yaml", 4, 11, "base.device",
     R"('cuda' needs a CUDA device)"},
    {"steps-measure-zero.yaml", 3, 31, "base.steps.measure",
     R"(0 is below the minimum 1)"},
    {"syntax-bad-indent.yaml", 4, 18, "",
     R"(YAML syntax error)"},
    {"syntax-unclosed-flow.yaml", 6, 1, "",
     R"(YAML syntax error)"},
    {"too-many-runs.yaml", 4, 1, "matrix",
     R"(12000 runs (4000 configurations x 3 repeats))"},
    {"unknown-base-key.yaml", 4, 3, "base.batchsize",
     R"(did you mean 'batch_size'?)"},
    {"unknown-plugin-param.yaml", 5, 5, "base.model.dept",
     R"(plugin 'resnet' has no parameter 'dept'; did you mean 'depth'?)"},
    {"unknown-plugin.yaml", 3, 10, "base.model",
     R"(unknown model plugin 'resnt'; did you mean 'resnet'?)"},
    {"unknown-top-level-key.yaml", 2, 1, "bsae",
     R"(did you mean 'base'?)"},
    {"unsupported-tag.yaml", 3, 15, "base.batch_size",
     R"(is not supported)"},
    {"very-deep-nesting.yaml", 2, 6014, "",
     R"(nesting is deeper)"},
};
// clang-format on

TEST_CASE("bad corpus: every file fails at its line and column", "[plan][bad]") {
  // Planned as for a machine without a GPU, whatever this one has: the checks that depend on
  // the machine are given its facts, so the corpus means the same everywhere.
  PlanOptions no_gpu;
  no_gpu.machine = MachineFacts{0};
  for (const BadFile& bad : kBadFiles) {
    const std::string path = std::string(ORCH_FIXTURES_DIR "/bad/") + bad.file;
    INFO(bad.file);
    try {
      make_plan(path, test::real_catalog(), no_gpu);
      FAIL_CHECK("planned without error");
    } catch (const PlanError& e) {
      INFO(e.what());
      CHECK(e.file == path);
      CHECK(e.line == bad.line);
      CHECK(e.col == bad.col);
      CHECK(e.key_path == bad.key_path);
      CHECK_THAT(e.message, Catch::Contains(bad.message));
      // what() always starts with "file:line:col: ".
      CHECK_THAT(e.what(), Catch::StartsWith(path + ":" + std::to_string(bad.line) + ":" +
                                             std::to_string(bad.col) + ": "));
    }
  }
}

TEST_CASE("bad corpus: every fixture is listed, and there are enough", "[plan][bad]") {
  std::set<std::string> listed, present;
  for (const BadFile& bad : kBadFiles) listed.insert(bad.file);
  for (const auto& entry : std::filesystem::directory_iterator(ORCH_FIXTURES_DIR "/bad")) {
    present.insert(entry.path().filename().string());
  }
  CHECK(listed == present);
  CHECK(listed.size() >= 25);
}

}  // namespace
}  // namespace orch
