// What `orch plan` catches before the night with the real plugins (a missing dataset or
// TorchScript file, a combination a plugin cannot run, a GPU the machine does not have), every
// problem at once; and `--check`, the rehearsal that trains one step of each configuration.
#include <torch/cuda.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "integration/test_support.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

using test::q;

fs::path write_file(const TempDir& tmp, const std::string& name, const std::string& text) {
  const fs::path file = tmp.path() / name;
  std::ofstream(file) << text;
  return file;
}

TEST_CASE("orch plan: the real plugins' problems, all at once, where they are written",
          "[cli][plan]") {
  TempDir tmp;
  fs::create_directories(tmp.path() / "empty");
  const fs::path file = write_file(tmp, "bad.yaml",
                                   R"(name: five-problems
base:
  device: cpu
  batch_size: 2
matrix:
  seed: [0]
  include:
    - {seed: 1, data: {plugin: imagefolder, root: /no/such/dataset}}
    - {seed: 2, data: {plugin: imagefolder, root: )" +
                                       (tmp.path() / "empty").string() + R"(}}
    - {seed: 3, model: {plugin: torchscript, path: missing.pt}}
    - {seed: 4, stream: {plugin: multi-stream, streams: 4}}
    - {seed: 5, stream: cuda-graph}
)");
  const fs::path db = tmp.path() / "results.db";
  const auto r = test::run_orch("--db " + q(db) + " plan " + q(file));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  const std::string f = file.string();
  CHECK_THAT(r.output, Catch::Contains(f + ":8:51: matrix.include[0].data.root: /no/such/dataset: "
                                           "no such folder"));
  CHECK_THAT(r.output, Catch::Contains(f + ":9:51: matrix.include[1].data.root: "));
  CHECK_THAT(r.output, Catch::Contains("no class folders"));
  CHECK_THAT(r.output, Catch::Contains(f + ":10:52: matrix.include[2].model.path: no such file: "
                                           "missing.pt"));
  CHECK_THAT(r.output, Catch::Contains(f + ":4:15: base.batch_size: a batch of 2 cannot be split "
                                           "into 4 micro-batches"));
  CHECK_THAT(r.output, Catch::Contains(f + ":12:25: matrix.include[4].stream: cuda-graph needs a "
                                           "CUDA device, and this configuration's device is cpu"));
  CHECK_FALSE(fs::exists(db));
  // sweep and run plan first: the same problems, nothing written.
  for (const std::string cmd : {"sweep", "run"}) {
    const auto s = test::run_orch("--db " + q(db) + " " + cmd + " " + q(file));
    CHECK(s.exit_code == 2);
    CHECK_THAT(s.output, Catch::Contains(f + ":10:52: matrix.include[2].model.path"));
    CHECK_FALSE(fs::exists(db));
  }
}

TEST_CASE("orch plan: fp16 under cuda-graph needs the fused optimizer", "[cli][plan]") {
  TempDir tmp;
  const fs::path file = write_file(tmp, "graph.yaml", R"(name: graph
base:
  stream: cuda-graph
  precision: {plugin: amp, dtype: fp16}
  optimizer: {impl: foreach}
)");
  const auto r = test::run_orch("plan " + q(file));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains(file.string() + ":5:21: base.optimizer.impl: fp16 under "
                                                       "cuda-graph needs optimizer.impl: fused"));
}

TEST_CASE("orch plan: device: cuda without a visible GPU is refused at plan time",
          "[cli][plan][gpu-presence]") {
  TempDir tmp;
  const fs::path file =
      write_file(tmp, "cuda.yaml", "name: cuda\nbase:\n  device: cuda\n  batch_size: 8\n");
  // CUDA_VISIBLE_DEVICES empty hides every GPU, so this holds on any machine.
  const auto visible = test::run_orch("plan " + q(file));
  const std::string cmd =
      "env CUDA_VISIBLE_DEVICES= '" + std::string(ORCH_BINARY) + "' plan " + q(file) + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = pclose(pipe);
  INFO(out);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(out, Catch::Contains(file.string() + ":3:11: base.device: 'cuda' needs a CUDA "
                                                  "device, and none is visible on this machine"));
  // Without hiding anything, the answer depends on the machine: where a GPU is visible,
  // tests/gpu/plan_gpu_test.cpp checks that device: cuda plans.
  if (torch::cuda::is_available()) {
    WARN("a GPU is visible: device: cuda plans here, which the GPU suite checks");
    return;
  }
  CHECK(visible.exit_code == 2);
  CHECK_THAT(visible.output, Catch::Contains(":3:11: base.device: 'cuda' needs a CUDA device"));
}

TEST_CASE("orch plan --check and sweep --check: one step each, every failure, nothing recorded",
          "[cli][plan][check]") {
  TempDir tmp;
  const fs::path file = write_file(tmp, "rehearse.yaml", R"(name: rehearse
base:
  model: {plugin: fault, at_step: 1}
  data: {plugin: synthetic, image_size: 8, classes: 4, batches: 1}
  batch_size: 4
  device: cpu
  repeat: 2
  steps: {warmup: 5, measure: 20}
  telemetry: {enabled: false}
matrix:
  model.mode: [none, throw, abort]
)");
  const fs::path db = tmp.path() / "results.db";
  const std::string plugins = "--plugin-path '" + std::string(ORCH_FAULT_PLUGIN_DIR) + "' ";
  for (const std::string cmd : {"plan --check ", "sweep --check "}) {
    const auto r = test::run_orch(plugins + "--db " + q(db) + " " + cmd + q(file));
    INFO(cmd << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("2 of 3 configuration(s) failed their first step"));
    // Both failures are listed with their error (their stderr tails, when not empty, below).
    CHECK_THAT(r.output, Catch::Contains("throw (failed): "));
    CHECK_THAT(r.output, Catch::Contains("abort (failed): the run's process ended without a "
                                         "result (signal 6 (SIGABRT))"));
    CHECK_THAT(r.output, Catch::Contains("  ok       "));
    CHECK_FALSE(fs::exists(db));
    CHECK_FALSE(fs::exists(tmp.path() / "results.db.runs"));
  }
  // All good: exit 0.
  const auto ok = test::run_orch(plugins + "--db " + q(db) + " plan --check " + q(file) +
                                 " 'model.mode=[none]'");
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.output, Catch::Contains("all 1 configuration(s) trained a step"));
  CHECK_FALSE(fs::exists(db));
}

}  // namespace
}  // namespace orch
