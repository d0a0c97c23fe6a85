// `profile: {steps: N}` for real on the CPU: the runner profiles N extra steps with LibTorch's
// profiler (Kineto) after the measured ones, writes a Chrome trace that parses and shows the
// runner's phases and ATen's operators, and the summary (no kernels on the CPU, the top host
// operators) reaches the document and the store; `orch run` and `orch sweep` (its child
// `orch exec`) put the trace in the run's folder beside the database and store its path.
#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "integration/test_support.h"
#include "runner/runner.h"
#include "storage/store.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using test::TempDir;

RunSpec profiled_spec(std::int64_t steps) {
  RunSpec s = test::small_cpu_spec();
  s.measure_steps = 4;
  s.profile.steps = steps;
  return s;
}

// Every event name in a Chrome trace file.
std::set<std::string> trace_event_names(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  const auto trace = nlohmann::json::parse(in);  // throws (fails the test) if not JSON
  REQUIRE(trace.contains("traceEvents"));
  std::set<std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    if (e.contains("name") && e["name"].is_string()) names.insert(e["name"].get<std::string>());
  }
  return names;
}

using test::write;

constexpr const char* kProfiledExperiment = R"(name: prof
base:
  model: {plugin: resnet, depth: 18}
  data: {plugin: synthetic, image_size: 32, classes: 10, batches: 1}
  batch_size: 4
  steps: {warmup: 1, measure: 2}
  device: cpu
  profile: {steps: 2}
)";

}  // namespace

TEST_CASE("profile: a CPU run writes a Chrome trace with its phases and ATen operators",
          "[runner][profile]") {
  TempDir tmp;
  const fs::path trace = tmp.path() / "sub" / "trace.json";  // the folder does not exist yet
  RunOutputs out;
  out.trace_path = trace.string();
  const auto doc = run_one(profiled_spec(3), test::built_plugins(), out);
  INFO(doc.dump(1).substr(0, 4000));
  REQUIRE(doc["status"] == "ok");
  REQUIRE(doc.contains("profile"));
  const auto& p = doc["profile"];
  CHECK_FALSE(p.contains("error"));
  CHECK(p["steps"] == 3);
  CHECK(p["profiler"] == "kineto");
  CHECK(p["activities"] == nlohmann::json::array({"cpu"}));
  CHECK(p["trace"] == fs::absolute(trace).string());
  REQUIRE(fs::exists(trace));
  CHECK(p["trace_bytes"].get<std::int64_t>() == static_cast<std::int64_t>(fs::file_size(trace)));

  // The CPU has no kernels: 0, and the GPU numbers are null, not 0.
  CHECK(p["kernels_per_step"] == 0.0);
  CHECK(p["gpu_busy_share"].is_null());
  CHECK(p["gpu_busy_share_profiled"].is_null());
  CHECK(p["gpu_kernel_ms_per_step"].is_null());
  // The measured step time is the run's own, for the busy share on a GPU.
  CHECK(p["measured_step_ms"] == doc["metrics"]["step_ms_mean"]);
  CHECK(p["top_kernels"].empty());
  CHECK(p["step_ms"].get<double>() > 0);
  CHECK(p["cpu_ops_per_step"].get<double>() > 50);  // a ResNet-18 step runs hundreds
  const auto& ops = p["top_cpu_ops"];
  REQUIRE(ops.size() == 10);
  std::set<std::string> op_names;
  double previous = 1e300;
  for (const auto& op : ops) {
    op_names.insert(op["name"].get<std::string>());
    CHECK(op["calls"].get<std::int64_t>() >= 1);
    CHECK(op["self_ms"].get<double>() <= previous);  // most time first
    CHECK(op["self_ms"].get<double>() <= op["total_ms"].get<double>() + 1e-9);
    previous = op["self_ms"].get<double>();
  }
  // Convolutions dominate a ResNet on the CPU, forward and backward.
  CHECK(op_names.count("aten::convolution_backward") == 1);

  const auto names = trace_event_names(trace);
  for (const char* expected : {"ProfilerStep#0", "ProfilerStep#2", "data", "copy to device",
                               "forward", "backward + optimizer", "aten::convolution",
                               "aten::convolution_backward", "aten::native_batch_norm"}) {
    INFO(expected);
    CHECK(names.count(expected) == 1);
  }
  CHECK(names.count("ProfilerStep#3") == 0);  // exactly `steps` steps
}

TEST_CASE("profile: the profiled steps come after the measurement and leave it as it was",
          "[runner][profile]") {
  TempDir tmp;
  RunOutputs out;
  out.trace_path = (tmp.path() / "trace.json").string();
  const auto plain = run_one(profiled_spec(0), test::built_plugins());
  const auto profiled = run_one(profiled_spec(2), test::built_plugins(), out);
  REQUIRE(plain["status"] == "ok");
  REQUIRE(profiled["status"] == "ok");
  CHECK_FALSE(plain.contains("profile"));
  // The measured steps, their losses and the weights they left are those of the unprofiled
  // run: the extra steps are not counted and change nothing that was recorded.
  CHECK(profiled["steps"].size() == 4);
  CHECK(profiled["metrics"]["loss_last"] == plain["metrics"]["loss_last"]);
  CHECK(profiled["metrics"]["param_checksum"] == plain["metrics"]["param_checksum"]);
}

TEST_CASE("profile: without a trace path the summary is still recorded", "[runner][profile]") {
  const auto doc = run_one(profiled_spec(1), test::built_plugins());
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["profile"]["trace"].is_null());
  CHECK_FALSE(doc["profile"].contains("error"));
  CHECK_FALSE(doc["profile"]["top_cpu_ops"].empty());
}

TEST_CASE("profile: a trace that cannot be written is reported, the run still succeeds",
          "[runner][profile]") {
  TempDir tmp;
  write(tmp.path() / "file", "not a folder");
  RunOutputs out;
  out.trace_path = (tmp.path() / "file" / "trace.json").string();
  const auto doc = run_one(profiled_spec(1), test::built_plugins(), out);
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["profile"]["trace"].is_null());
  CHECK_THAT(doc["profile"]["error"].get<std::string>(),
             Contains("the trace could not be written"));
  CHECK_FALSE(doc["profile"]["top_cpu_ops"].empty());  // the summary does not need the file
}

TEST_CASE("profile: orch run and orch sweep store the summary and the trace beside the database",
          "[runner][profile][cli][sweep]") {
  TempDir tmp;
  write(tmp.path() / "prof.yaml", kProfiledExperiment);
  for (const std::string command : {"run", "sweep"}) {
    INFO(command);
    const fs::path db = tmp.path() / (command + ".db");
    auto r = test::run_orch("--db '" + db.string() + "' " + command + " '" +
                            (tmp.path() / "prof.yaml").string() + "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Contains("kernels/step  busy (trace)"));
    CHECK_THAT(r.output, !Contains("gpuGetDeviceCount"));  // Kineto's noise without a GPU

    storage::Store store(db.string());
    const auto sweep = store.find_sweep("prof");
    REQUIRE(sweep);
    const auto runs = store.runs(*sweep);
    REQUIRE(runs.size() == 1);
    REQUIRE(runs[0].profile);
    const storage::RunProfile& p = *runs[0].profile;
    CHECK(p.steps == 2);
    CHECK(p.kernels_per_step == 0.0);
    CHECK_FALSE(p.gpu());
    CHECK(p.error.empty());
    CHECK(p.top_cpu_ops.size() == 10);
    // One place for both commands: <db>.runs/<sweep>/<hash prefix>-r<repeat>/trace.json.
    const fs::path expected =
        fs::absolute(fs::path(db.string() + ".runs") / "prof" /
                     (runs[0].config_hash.substr(0, 12) + "-r0") / "trace.json");
    CHECK(p.trace_path == expected.string());
    REQUIRE(fs::exists(expected));
    CHECK(trace_event_names(expected).count("forward") == 1);
    storage::Statement v(store.database(),
                         "SELECT profile_kernels_per_step, profile_trace FROM run_summary");
    REQUIRE(v.step());
    CHECK(v.column_double(0) == 0.0);
    CHECK(v.column_text(1) == expected.string());
  }
}

}  // namespace orch
