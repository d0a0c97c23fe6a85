// The experiment key `cuda_connections` (CUDA_DEVICE_MAX_CONNECTIONS for a run's process):
// what it accepts and refuses, that it reaches the run, and how it enters the hash.
#include <catch2/catch.hpp>

#include "plan/run_spec_json.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using test::plan_failure;
using test::plan_text;

TEST_CASE("cuda_connections: driver by default, an int from 1 to 32 when set", "[plan]") {
  Plan d = plan_text("name: x\n");
  CHECK_FALSE(d.runs[0].cuda_connections.has_value());
  CHECK(d.runs[0].config.json()["cuda_connections"] == "driver");

  Plan p = plan_text("name: x\nbase:\n  cuda_connections: 32\n");
  REQUIRE(p.runs[0].cuda_connections.has_value());
  CHECK(*p.runs[0].cuda_connections == 32);
  // Through the JSON specification `orch exec` reads, and back to the driver's.
  CHECK(run_spec_from_json(run_spec_json(p.runs[0])).cuda_connections == 32);
  CHECK_FALSE(run_spec_from_json(run_spec_json(d.runs[0])).cuda_connections.has_value());

  Plan m = plan_text("name: x\nmatrix:\n  cuda_connections: [driver, 1, 8, 32]\n");
  REQUIRE(m.runs.size() == 4);
  CHECK_FALSE(m.runs[0].cuda_connections.has_value());
  CHECK(*m.runs[1].cuda_connections == 1);
  CHECK(*m.runs[3].cuda_connections == 32);
  CHECK(m.runs[3].name == "cuda_connections=32");
}

TEST_CASE("cuda_connections: out of range or not a number is refused where it is written",
          "[plan]") {
  struct Case {
    const char* value;
    const char* message;
  };
  for (const Case c :
       {Case{"0", "0 is out of range"}, Case{"33", "33 is out of range"},
        Case{"-4", "-4 is out of range"}, Case{"many", "got 'many'"}, Case{"8.5", "got '8.5'"}}) {
    INFO(c.value);
    PlanError e =
        plan_failure(std::string("name: x\nbase:\n  cuda_connections: ") + c.value + "\n");
    CHECK(e.key_path == "base.cuda_connections");
    CHECK(e.line == 3);
    CHECK(e.col == 21);
    CHECK_THAT(e.message, Catch::Contains(c.message));
    CHECK(e.allowed == "driver, or an int from 1 to 32");
  }
}

TEST_CASE("hash: cuda_connections at driver leaves the hash alone, set it is hashed",
          "[plan][hash]") {
  const auto hash = [](const std::string& base) {
    return plan_text("name: x\nbase:\n  batch_size: 16\n" + base).runs[0].hash;
  };
  const std::string plain = hash("");
  CHECK(hash("  cuda_connections: driver\n") == plain);
  CHECK(hash("  cuda_connections: 8\n") != plain);  // 8 is the driver's default, but said
  CHECK(hash("  cuda_connections: 32\n") != hash("  cuda_connections: 8\n"));
}

}  // namespace
}  // namespace orch
