// The experiment file's `telemetry` key: defaults, validation, sweeping, and how it enters
// the configuration hash (only when not at its default, so older hashes stay valid).
#include <catch2/catch.hpp>

#include "plan/config_hash.h"
#include "plan/plan_error.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using test::plan_text;

TEST_CASE("telemetry settings: on at 100 ms unless written", "[telemetry][plan]") {
  const Plan p = plan_text("name: x\n");
  const RunSpec& r = p.runs.at(0);
  CHECK(r.telemetry.enabled);
  CHECK(r.telemetry.interval_ms == 100);
  CHECK(r.config.json()["telemetry"] == nlohmann::json{{"enabled", true}, {"interval_ms", 100}});
  CHECK_FALSE(hash_input(r.config.json()).contains("telemetry"));
}

TEST_CASE("telemetry settings: written values reach the RunSpec", "[telemetry][plan]") {
  const Plan p = plan_text("name: x\nbase:\n  telemetry: {enabled: false, interval_ms: 250}\n");
  CHECK_FALSE(p.runs.at(0).telemetry.enabled);
  CHECK(p.runs.at(0).telemetry.interval_ms == 250);
  // A field left out takes its default, like `steps`.
  const Plan q = plan_text("name: x\nbase:\n  telemetry: {interval_ms: 50}\n");
  CHECK(q.runs.at(0).telemetry.enabled);
  CHECK(q.runs.at(0).telemetry.interval_ms == 50);
}

TEST_CASE("telemetry settings: defaults written out keep the hash; other values change it",
          "[telemetry][plan]") {
  const std::string plain = plan_text("name: x\n").runs.at(0).hash;
  CHECK(plan_text("name: x\nbase:\n  telemetry: {enabled: true, interval_ms: 100}\n")
            .runs.at(0)
            .hash == plain);
  CHECK(plan_text("name: x\nbase:\n  telemetry: {enabled: yes}\n").runs.at(0).hash == plain);
  const std::string off =
      plan_text("name: x\nbase:\n  telemetry: {enabled: false}\n").runs.at(0).hash;
  const std::string fast =
      plan_text("name: x\nbase:\n  telemetry: {interval_ms: 20}\n").runs.at(0).hash;
  CHECK(off != plain);
  CHECK(fast != plain);
  CHECK(off != fast);
}

TEST_CASE("telemetry settings: sweeping on/off gives two configurations", "[telemetry][plan]") {
  const Plan p =
      plan_text("name: x\nbase:\n  repeat: 2\nmatrix:\n  telemetry.enabled: [true, false]\n");
  REQUIRE(p.runs.size() == 4);
  CHECK(p.runs[0].telemetry.enabled);
  CHECK_FALSE(p.runs[2].telemetry.enabled);
  CHECK(p.runs[0].hash != p.runs[2].hash);
  CHECK(p.runs[0].name == "enabled=true");
  CHECK(p.runs[2].name == "enabled=false");
}

TEST_CASE("telemetry settings: bad values are refused where they are written",
          "[telemetry][plan]") {
  const PlanError maybe = test::plan_failure("name: x\nbase:\n  telemetry: {enabled: maybe}\n");
  CHECK(std::string(maybe.what()).find("base.telemetry.enabled") != std::string::npos);
  const PlanError fast = test::plan_failure("name: x\nbase:\n  telemetry: {interval_ms: 5}\n");
  CHECK(std::string(fast.what()).find("base.telemetry.interval_ms") != std::string::npos);
  CHECK(std::string(fast.what()).find("below the minimum 10") != std::string::npos);
  const PlanError typo = test::plan_failure("name: x\nbase:\n  telemetry: {interval: 100}\n");
  CHECK(std::string(typo.what()).find("interval_ms") != std::string::npos);  // did you mean
}

}  // namespace
}  // namespace orch
