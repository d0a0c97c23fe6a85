// Helpers shared by the LibTorch test suites: a registry over the built plugins, RunSpecs made
// by hand (independent of the planner), temporary folders, and running the orch binary.
#pragma once

#include <torch/nn/modules/linear.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>

#include "orch/model.h"
#include "plan/run_spec.h"
#include "plugin_host/registry.h"
#include "storage/store.h"

namespace orch::test {

inline PluginRegistry& built_plugins() {
  static PluginRegistry registry = [] {
    PluginRegistry r;
    // The build's own plugins, loaded straight into the test process: a GPU test may have
    // made its CUDA context before this first call, and a forked child of such a process must
    // not load CUDA code. The load probe has tests of its own (plugin_load_probe_test.cpp).
    LoadProbeOptions trusted;
    trusted.enabled = false;
    r.set_load_probe(trusted);
    r.load_directories({ORCH_PLUGIN_BUILD_DIR});
    return r;
  }();
  return registry;
}

/// Copies every parameter and buffer of `from` into `to` (same names in both).
inline void copy_state(torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto src_p = from.named_parameters();
  for (auto& p : to.named_parameters()) p.value().copy_(src_p[p.key()]);
  auto src_b = from.named_buffers();
  for (auto& b : to.named_buffers()) b.value().copy_(src_b[b.key()]);
}

inline PluginChoice choice(const std::string& plugin, std::map<std::string, Value> params = {}) {
  return {plugin, Params(std::move(params))};
}

/// A small, fast CPU configuration: ResNet18 on 32x32 images, 10 classes, one fixed batch.
inline RunSpec small_cpu_spec() {
  RunSpec s;
  s.name = "test";
  s.hash = "0123456789abcdef0123456789abcdef";
  s.experiment = "unit";
  s.model = choice("resnet", {{"depth", std::int64_t{18}}});
  s.data = choice("synthetic", {{"image_size", std::int64_t{32}},
                                {"channels", std::int64_t{3}},
                                {"classes", std::int64_t{10}},
                                {"batches", std::int64_t{1}},
                                {"location", std::string("device")}});
  s.precision = choice("fp32");
  s.stream = choice("default");
  s.batch_size = 8;
  s.warmup_steps = 1;
  s.measure_steps = 12;
  s.optimizer.lr = 0.05;
  s.optimizer.weight_decay = 0.0;
  s.device = "cpu";
  s.config = nlohmann::json{{"model", {{"plugin", "resnet"}, {"depth", 18}}},
                            {"data", {{"plugin", "synthetic"}}},
                            {"precision", {{"plugin", "fp32"}}},
                            {"stream", {{"plugin", "default"}}},
                            {"batch_size", 8},
                            {"memory_format", "contiguous"}};
  return s;
}

/// SGD settings with the given implementation and hyper-parameters.
inline OptimizerSpec sgd(const std::string& impl, double lr, double momentum = 0.0,
                         double weight_decay = 0.0) {
  OptimizerSpec s;
  s.impl = impl;
  s.lr = lr;
  s.momentum = momentum;
  s.weight_decay = weight_decay;
  return s;
}

/// A one-layer model for driving a precision mode directly; it remembers the dtype its layer
/// produced in the last forward (what autocast chose).
struct LinearProbe final : Model {
  explicit LinearProbe(std::int64_t in = 4, std::int64_t out = 3) : fc(in, out) {}
  torch::nn::Linear fc;
  torch::ScalarType seen = torch::kFloat;
  torch::nn::Module& module() override { return *fc; }
  torch::Tensor forward(const torch::Tensor& x) override {
    auto y = fc(x);
    seen = y.scalar_type();
    return y;
  }
};

/// A fresh, empty directory under the system temp folder, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("orch-test-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr together
};

/// Runs a shell command line (already quoted), capturing its output and exit code.
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Runs the built orch binary with `args` (already shell-quoted), capturing its output.
inline CommandResult run_orch(const std::string& args) {
  return run_command(std::string("'") + ORCH_BINARY + "' " + args);
}

/// Writes `text` to the file at `p`, replacing it.
inline void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

/// `p` in single quotes, for a shell command line (paths the tests make have no quote).
inline std::string q(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

/// A tiny experiment that runs in seconds on the CPU: ResNet18 on 32x32 images, batch 4, one
/// warm-up and three measured steps. Tests append their own matrix or edit its name.
constexpr const char* kTiny = R"(name: tiny
base:
  model: {plugin: resnet, depth: 18}
  data: {plugin: synthetic, image_size: 32, classes: 10, batches: 1}
  batch_size: 4
  steps: {warmup: 1, measure: 3}
  device: cpu
)";

/// A whole file's bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The runs recorded for sweep `sweep` in the database at `db`; the sweep must exist.
inline std::vector<storage::RunRecord> runs_of(const std::filesystem::path& db,
                                               const std::string& sweep) {
  storage::Store store(db.string());
  const auto id = store.find_sweep(sweep);
  REQUIRE(id.has_value());
  return store.runs(*id);
}

/// The folder name of the plan's first run under DB.runs/<sweep>/: "<12 hex digits>-r0".
inline std::string first_run_folder(const std::filesystem::path& experiment) {
  auto plan = run_orch("plan " + q(experiment));
  std::smatch m;
  REQUIRE(std::regex_search(plan.output, m, std::regex(R"(\n0\s+\S+\s+([0-9a-f]{12}))")));
  return m[1].str() + "-r0";
}

}  // namespace orch::test
