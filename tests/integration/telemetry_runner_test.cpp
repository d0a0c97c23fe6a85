// Telemetry in a real run's document (on the CPU, where there is nothing to sample), the
// NVML facts in its environment (through the fake NVML), and `orch doctor` through the binary.
#include <torch/cuda.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "integration/test_support.h"
#include "runner/runner.h"

using namespace orch;

namespace {

/// Sets an environment variable for one scope (the orch binary started inside inherits it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// tests/fixtures/fake_nvml, built beside the test plugins' folder.
std::string fake_nvml() {
  return (std::filesystem::path(ORCH_TEST_PLUGIN_DIR).parent_path() / "test-fixtures" /
          "libfake_nvml.so")
      .string();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("telemetry: a CPU run says telemetry is unavailable and why", "[runner][telemetry]") {
  ScopedEnv nvml("ORCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
  const auto doc = run_one(test::small_cpu_spec(), test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["version"] == 2);
  const auto& t = doc["telemetry"];
  CHECK(t["available"] == false);
  CHECK(t["reason"] == "the run's device is the CPU");
  CHECK(t["source"] == "nvml");
  CHECK(t["samples"].empty());
  CHECK(t["gpu_lost"] == false);
  const auto& m = doc["metrics"];
  CHECK(m["host_peak_rss_bytes"].get<std::int64_t>() > 0);
  CHECK_FALSE(m.contains("telemetry_samples"));
  CHECK_FALSE(m.contains("gpu_util_mean_pct"));
  // The environment still records what it can, and why NVML gave nothing.
  const auto& env = doc["environment"];
  CHECK(env["git_revision"].is_string());
  CHECK(env.contains("cpu_model"));
  CHECK(env["driver_version"].is_null());
  CHECK(contains(env["nvml_error"].get<std::string>(), "/nonexistent/libnvidia-ml.so.1"));
}

TEST_CASE("telemetry: disabled in the experiment, the document says so", "[runner][telemetry]") {
  RunSpec spec = test::small_cpu_spec();
  spec.telemetry.enabled = false;
  spec.telemetry.interval_ms = 250;
  const auto doc = run_one(spec, test::built_plugins());
  REQUIRE(doc["status"] == "ok");
  CHECK(contains(doc["telemetry"]["reason"].get<std::string>(), "telemetry.enabled: false"));
  CHECK(doc["telemetry"]["interval_ms"] == 250);
  CHECK(doc["metrics"]["host_peak_rss_bytes"].get<std::int64_t>() > 0);
}

TEST_CASE("telemetry: a CPU run samples its host from /proc", "[runner][telemetry][host]") {
  RunSpec spec = test::small_cpu_spec();
  spec.telemetry.interval_ms = 5;  // several samples inside even a short measurement
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  const auto& h = doc["host_telemetry"];
  CHECK(h["available"] == true);
  CHECK(h["source"] == "procfs");
  CHECK(h["cores"].get<int>() >= 1);
  REQUIRE(h["measure_window_s"].is_array());
  CHECK_FALSE(h["samples"].empty());
  const auto& m = doc["metrics"];
  CHECK(m["host_cpu_cores"] == h["cores"]);
  REQUIRE(m.contains("host_telemetry_samples"));
  if (m["host_telemetry_samples"].get<int>() > 0) {
    CHECK(m["host_cpu_util_mean_pct"].get<double>() >= 0.0);
    CHECK(m["host_cpu_util_max_pct"].get<double>() <= 100.0);
    CHECK(m["host_mem_available_min_bytes"].get<std::int64_t>() > 0);
  }
}

TEST_CASE("telemetry: an unreadable /proc leaves the host unsampled, with the reason",
          "[runner][telemetry][host]") {
  ScopedEnv root("ORCH_PROC_ROOT", "/nonexistent/proc");
  const auto doc = run_one(test::small_cpu_spec(), test::built_plugins());
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["host_telemetry"]["available"] == false);
  CHECK(doc["host_telemetry"]["reason"] == "cannot read /nonexistent/proc/stat");
  CHECK_FALSE(doc["metrics"].contains("host_cpu_util_mean_pct"));
}

TEST_CASE("telemetry: the environment carries NVML's driver version", "[runner][telemetry]") {
  ScopedEnv nvml("ORCH_NVML_LIBRARY", fake_nvml().c_str());
  ScopedEnv mode("FAKE_NVML_MODE", "ok");
  const auto doc = run_one(test::small_cpu_spec(), test::built_plugins());
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["environment"]["driver_version"] == "580.65.06-fake");
  CHECK_FALSE(doc["environment"].contains("nvml_error"));
}

TEST_CASE("telemetry: a run on a GPU samples that GPU through the real NVML",
          "[runner][telemetry]") {
  // On a machine without CUDA, `auto` resolves to the CPU and this checks the unavailable
  // path once more; the GPU machine (which runs this suite too) checks the real NVML.
  RunSpec spec = test::small_cpu_spec();
  spec.device = "auto";
  spec.telemetry.interval_ms = 10;
  const bool cuda = torch::cuda::is_available();
  if (cuda) spec.measure_steps = 400;  // about a second of measured steps on a fast GPU
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc["telemetry"].dump(2).substr(0, 4000));
  REQUIRE(doc["status"] == "ok");
  const auto& t = doc["telemetry"];
  if (!cuda) {
    CHECK(t["available"] == false);
    CHECK(t["reason"] == "the run's device is the CPU");
    return;
  }
  REQUIRE(t["available"] == true);
  CHECK(t["reason"].is_null());
  CHECK(t["gpu_lost"] == false);
  REQUIRE(t["measure_window_s"].is_array());
  CHECK(t["samples"].size() >= 3);
  double last = -1;
  for (const auto& s : t["samples"]) {
    CHECK(s["t_s"].get<double>() > last);
    last = s["t_s"].get<double>();
  }
  const auto& m = doc["metrics"];
  CHECK(m["telemetry_samples"].get<std::int64_t>() >= 1);
  CHECK(m["memory_used_max_bytes"].get<std::int64_t>() > 0);
  CHECK(m["power_mean_w"].get<double>() > 0);
  CHECK(m.contains("gpu_util_mean_pct"));
  CHECK(m.contains("sm_clock_mean_mhz"));
  const auto& env = doc["environment"];
  CHECK(env["driver_version"].is_string());
  CHECK(env["gpu_uuid"].get<std::string>().rfind("GPU-", 0) == 0);
  CHECK(env["pcie"]["gen_max"].is_number());
  CHECK(env["pcie"]["width_max"].is_number());
  CHECK(env["persistence_mode"].is_boolean());
}

TEST_CASE("telemetry: orch doctor exits 1 on an error finding, 0 on warnings only",
          "[cli][telemetry]") {
  ScopedEnv nvml("ORCH_NVML_LIBRARY", fake_nvml().c_str());
  ScopedEnv mode("FAKE_NVML_MODE", "ok");
  {
    ScopedEnv blocking("CUDA_LAUNCH_BLOCKING", "1");
    const auto r = test::run_orch("doctor");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.output, "error    launch_blocking  CUDA_LAUNCH_BLOCKING=1"));
    CHECK(contains(r.output, "-> It kills the asynchrony"));
  }
  {
    ScopedEnv blocking("CUDA_LAUNCH_BLOCKING", nullptr);
    const auto r = test::run_orch("doctor");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, "ok       launch_blocking"));
    CHECK(contains(r.output, "driver 580.65.06-fake"));
    const auto j = test::run_orch("doctor --json");
    INFO(j.output);
    CHECK(j.exit_code == 0);
    const auto doc = nlohmann::json::parse(j.output);
    CHECK(doc["ok"] == true);
    CHECK(doc["facts"]["driver_version"] == "580.65.06-fake");
    CHECK(doc["findings"].size() >= 3);
  }
}
