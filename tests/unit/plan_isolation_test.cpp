// The experiment key `isolation` (how `orch sweep` runs a configuration: a process of its own,
// or a warm worker) and when a run may go to a worker: what the key accepts and refuses, that it
// reaches the run, how it enters the hash, and which runs and outcomes keep a worker.
#include <catch2/catch.hpp>

#include "plan/run_spec_json.h"
#include "sweep/worker_pool.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using test::plan_failure;
using test::plan_text;

TEST_CASE("isolation: worker by default, process when asked, sweepable", "[plan][worker]") {
  const Plan d = plan_text("name: x\n");
  CHECK(d.runs[0].isolation == "worker");
  CHECK(d.runs[0].config.json()["isolation"] == "worker");
  const Plan p = plan_text("name: x\nbase:\n  isolation: process\n");
  CHECK(p.runs[0].isolation == "process");
  // Through the specification a sweep writes for the run's process.
  CHECK(run_spec_from_json(run_spec_json(p.runs[0])).isolation == "process");
  CHECK(run_spec_from_json(run_spec_json(d.runs[0])).isolation == "worker");
  // A specification recorded before the key existed ran in a process of its own.
  nlohmann::json old = run_spec_json(d.runs[0]);
  old["config"].erase("isolation");
  CHECK(run_spec_from_json(old).isolation == "process");
  const Plan m = plan_text("name: x\nmatrix:\n  isolation: [process, worker]\n");
  REQUIRE(m.runs.size() == 2);
  CHECK(m.runs[0].isolation == "process");
  CHECK(m.runs[1].isolation == "worker");
  CHECK(m.runs[0].hash != m.runs[1].hash);
}

TEST_CASE("isolation: anything else is refused where it is written", "[plan][worker]") {
  const PlanError e = plan_failure("name: x\nbase:\n  isolation: thread\n");
  CHECK(e.key_path == "base.isolation");
  CHECK(std::string(e.what()).find("process, worker") != std::string::npos);
}

TEST_CASE("hash: isolation at worker (the default) leaves the hash alone, process is hashed",
          "[plan][hash]") {
  const auto hash = [](const std::string& base) {
    return plan_text("name: x\nbase:\n  batch_size: 16\n" + base).runs[0].hash;
  };
  const std::string plain = hash("");
  CHECK(hash("  isolation: worker\n") == plain);
  CHECK(hash("  isolation: process\n") != plain);
}

TEST_CASE("worker: which runs go to a worker", "[sweep][worker]") {
  RunSpec spec = plan_text("name: x\nbase:\n  isolation: worker\n").runs[0];
  CHECK(sweep::runs_in_worker(spec));
  CHECK_FALSE(sweep::own_process_reason(spec));

  RunSpec process = spec;
  process.isolation = "process";
  CHECK_FALSE(sweep::runs_in_worker(process));
  CHECK(*sweep::own_process_reason(process) == "");

  RunSpec connections = spec;
  connections.cuda_connections = 32;
  CHECK_FALSE(sweep::runs_in_worker(connections));
  CHECK(sweep::own_process_reason(connections)->find("cuda_connections") != std::string::npos);

  RunSpec script = spec;
  script.workload.kind = "script";
  CHECK_FALSE(sweep::runs_in_worker(script));
}

TEST_CASE("worker: used again only after an ok run the sweep did not stop", "[sweep][worker]") {
  CHECK(sweep::worker_reusable(RunStatus::ok, false));
  CHECK_FALSE(sweep::worker_reusable(RunStatus::ok, true));  // stopped after answering
  for (RunStatus s : {RunStatus::failed, RunStatus::oom, RunStatus::diverged, RunStatus::timeout,
                      RunStatus::interrupted}) {
    INFO(to_string(s));
    CHECK_FALSE(sweep::worker_reusable(s, false));
  }
  CHECK_FALSE(sweep::worker_reusable(std::nullopt, false));
}

}  // namespace
}  // namespace orch
