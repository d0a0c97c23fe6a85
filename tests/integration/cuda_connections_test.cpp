// `cuda_connections` end to end on the CPU: the value reaches each run's process environment
// (stored with the run), `orch sweep` gives every configuration its own, `orch run` (one
// process) refuses configurations that differ before anything is written, and a run started in
// a process set up for another value fails instead of being stored as if it had it.
#include "runner/cuda_connections.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>

#include "integration/test_support.h"
#include "runner/runner.h"
#include "storage/store.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

fs::path write_experiment(const test::TempDir& tmp, const std::string& name,
                          const std::string& connections) {
  const fs::path file = tmp.path() / (name + ".yaml");
  std::ofstream(file) << "name: " << name << R"(
base:
  model: {plugin: resnet, depth: 18}
  data: {plugin: synthetic, image_size: 32, classes: 10, batches: 1}
  batch_size: 4
  steps: {warmup: 1, measure: 2}
  telemetry: {enabled: false}
  device: cpu
)" << connections;
  return file;
}

// Run name -> the CUDA_DEVICE_MAX_CONNECTIONS its stored environment holds ("" when unset).
std::map<std::string, std::string> stored_connections(const fs::path& db) {
  storage::Store store(db.string());
  storage::Statement st(store.database(),
                        "SELECT name, status, "
                        "json_extract(environment_json, '$.variables.CUDA_DEVICE_MAX_CONNECTIONS') "
                        "FROM runs ORDER BY id");
  std::map<std::string, std::string> out;
  while (st.step()) {
    INFO(st.column_text(0));
    CHECK(st.column_text(1) == "ok");
    out[st.column_text(0)] = st.column_text(2);
  }
  return out;
}

// The variable as the test process had it, put back afterwards (orch binaries inherit it).
struct SavedVariable {
  SavedVariable() {
    if (const char* v = std::getenv(kCudaConnectionsVariable)) value = v;
    ::unsetenv(kCudaConnectionsVariable);
  }
  ~SavedVariable() {
    if (value)
      ::setenv(kCudaConnectionsVariable, value->c_str(), 1);
    else
      ::unsetenv(kCudaConnectionsVariable);
  }
  std::optional<std::string> value;
};

}  // namespace

TEST_CASE("orch sweep starts each run with its own cuda_connections", "[cli][cuda_connections]") {
  SavedVariable saved;
  test::TempDir tmp;
  const auto file = write_experiment(tmp, "conn", "matrix:\n  cuda_connections: [driver, 3, 17]\n");
  const auto db = tmp.path() / "s.db";
  auto r = test::run_orch("--db '" + db.string() + "' sweep '" + file.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto got = stored_connections(db);
  REQUIRE(got.size() == 3);
  CHECK(got.at("driver").empty());  // left to the driver: not set
  CHECK(got.at("cuda_connections=3") == "3");
  CHECK(got.at("cuda_connections=17") == "17");
}

TEST_CASE("orch run sets one cuda_connections for its process, and refuses two",
          "[cli][cuda_connections]") {
  SavedVariable saved;
  test::TempDir tmp;
  const auto db = tmp.path() / "r.db";
  // Two values cannot both hold in one process: refused, nothing runs, no database.
  const auto two = write_experiment(tmp, "two", "matrix:\n  cuda_connections: [4, 32]\n");
  auto refused = test::run_orch("--db '" + db.string() + "' run '" + two.string() + "'");
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  // At the axis, like any bad input: two.yaml's line 10 is `  cuda_connections: [4, 32]`,
  // the values at column 21.
  CHECK_THAT(refused.output, Contains("two.yaml:10:21: matrix.cuda_connections: "));
  CHECK_THAT(refused.output, Contains("cuda_connections differs between configurations"));
  CHECK_THAT(refused.output, Contains("orch sweep"));
  CHECK_FALSE(fs::exists(db));

  const auto one = write_experiment(
      tmp, "one", "  cuda_connections: 5\nmatrix:\n  memory_format: [contiguous, channels_last]\n");
  auto ran = test::run_orch("--db '" + db.string() + "' run '" + one.string() + "'");
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  // The process planned with the variable unset, so it restarted itself once with it set.
  CHECK_THAT(ran.output, Contains("orch run: restarting with CUDA_DEVICE_MAX_CONNECTIONS=5"));
  CHECK(ran.output.find("restarting") == ran.output.rfind("restarting"));
  CHECK_THAT(ran.output, Contains("CUDA_DEVICE_MAX_CONNECTIONS=5 for every run"));
  auto got = stored_connections(db);
  REQUIRE(got.size() == 2);
  for (const auto& [name, value] : got) CHECK(value == "5");

  // Already set as asked in the environment it was started with: no restart.
  ::setenv(kCudaConnectionsVariable, "5", 1);
  auto again = test::run_orch("--db '" + db.string() + "' run '" + one.string() + "'");
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK(again.output.find("restarting") == std::string::npos);
  got = stored_connections(db);
  for (const auto& [name, value] : got) CHECK(value == "5");
}

TEST_CASE("a run whose process has another CUDA_DEVICE_MAX_CONNECTIONS fails, named",
          "[runner][cuda_connections]") {
  SavedVariable saved;
  RunSpec spec = test::small_cpu_spec();
  spec.measure_steps = 2;
  spec.cuda_connections = 12;
  auto doc = run_one(spec, test::built_plugins());
  CHECK(doc["status"] == "failed");
  CHECK_THAT(doc["error"].get<std::string>(),
             Contains("cuda_connections: 12") && Contains("CUDA_DEVICE_MAX_CONNECTIONS unset"));

  ::setenv(kCudaConnectionsVariable, "12", 1);
  doc = run_one(spec, test::built_plugins());
  CHECK(doc["status"] == "ok");
  CHECK(doc["environment"]["variables"]["CUDA_DEVICE_MAX_CONNECTIONS"] == "12");

  spec.cuda_connections.reset();  // driver: whatever the process has is fine
  CHECK(run_one(spec, test::built_plugins())["status"] == "ok");
}

TEST_CASE("common_cuda_connections names two configurations that differ", "[cuda_connections]") {
  RunSpec a, b;
  a.name = "a";
  b.name = "b";
  CHECK_FALSE(common_cuda_connections({a, b}).has_value());
  a.cuda_connections = b.cuda_connections = 16;
  CHECK(common_cuda_connections({a, b}) == 16);
  b.cuda_connections.reset();
  CHECK_THROWS_WITH(common_cuda_connections({a, b}), Contains("'a': 16, 'b': driver"));
}

}  // namespace orch
