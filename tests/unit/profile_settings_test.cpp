// The experiment file's `profile` key: off unless written, validated where it is written
// (file:line:col, the allowed values or keys), sweepable, and part of the configuration hash
// only when on, so every hash from before the key existed stays valid.
#include <catch2/catch.hpp>

#include "plan/config_hash.h"
#include "plan/plan_error.h"
#include "plan/run_spec_json.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using Catch::Contains;
using test::plan_failure;
using test::plan_text;

TEST_CASE("profile settings: off unless written", "[profile][plan]") {
  const RunSpec r = plan_text("name: x\n").runs.at(0);
  CHECK_FALSE(r.profile.enabled());
  CHECK(r.profile.steps == 0);
  CHECK(r.config.json()["profile"] == nlohmann::json{{"steps", 0}});
  CHECK_FALSE(hash_input(r.config.json()).contains("profile"));
}

TEST_CASE("profile settings: steps reach the RunSpec and its JSON", "[profile][plan]") {
  const RunSpec r = plan_text("name: x\nbase:\n  profile: {steps: 5}\n").runs.at(0);
  CHECK(r.profile.enabled());
  CHECK(r.profile.steps == 5);
  // The child process of `orch sweep` reads the same value back from the specification.
  const RunSpec back = run_spec_from_json(run_spec_json(r));
  CHECK(back.profile.steps == 5);
  CHECK(back.hash == r.hash);
  // A specification written before the key existed is an unprofiled run, not an error.
  nlohmann::json old = run_spec_json(r);
  old["config"].erase("profile");
  CHECK(run_spec_from_json(old).profile.steps == 0);
  // The largest allowed value.
  CHECK(plan_text("name: x\nbase:\n  profile: {steps: 100}\n").runs.at(0).profile.steps == 100);
}

TEST_CASE("profile settings: the hash changes only when profiling is on", "[profile][plan]") {
  const std::string plain = plan_text("name: x\n").runs.at(0).hash;
  // The all-defaults hash of plan_hash_test.cpp, from before the key existed.
  CHECK(plan_text("name: x\n", {}, test::real_catalog()).runs.at(0).hash ==
        "8b922a3df0c97eb438ad02254c052273");
  CHECK(plan_text("name: x\nbase:\n  profile: {steps: 0}\n").runs.at(0).hash == plain);
  CHECK(plan_text("name: x\nbase:\n  profile: {}\n").runs.at(0).hash == plain);
  const std::string five = plan_text("name: x\nbase:\n  profile: {steps: 5}\n").runs.at(0).hash;
  const std::string ten = plan_text("name: x\nbase:\n  profile: {steps: 10}\n").runs.at(0).hash;
  CHECK(five != plain);
  CHECK(ten != plain);
  CHECK(five != ten);
}

TEST_CASE("profile settings: a matrix axis and an override", "[profile][plan]") {
  const Plan p = plan_text("name: x\nmatrix:\n  profile.steps: [0, 3]\n");
  REQUIRE(p.runs.size() == 2);
  CHECK_FALSE(p.runs[0].profile.enabled());
  CHECK(p.runs[1].profile.steps == 3);
  CHECK(p.runs[0].hash != p.runs[1].hash);
  const Plan o = plan_text("name: x\n", PlanOptions{{"profile.steps=7"}, 10000});
  CHECK(o.runs.at(0).profile.steps == 7);
}

TEST_CASE("profile settings: bad values are refused at their line and column", "[profile][plan]") {
  const PlanError many = plan_failure("name: x\nbase:\n  profile: {steps: 101}\n");
  CHECK(many.line == 3);
  CHECK(many.col == 20);
  CHECK(many.key_path == "base.profile.steps");
  CHECK_THAT(many.what(),
             Contains("test.yaml:3:20: base.profile.steps: 101 is above the maximum 100"));
  CHECK_THAT(many.what(), Contains("allowed: 0 (off), or an int from 1 to 100"));

  const PlanError negative = plan_failure("name: x\nbase:\n  profile: {steps: -1}\n");
  CHECK_THAT(negative.what(),
             Contains("test.yaml:3:20: base.profile.steps: -1 is below the minimum 0"));

  const PlanError text = plan_failure("name: x\nbase:\n  profile: {steps: lots}\n");
  CHECK_THAT(text.what(), Contains("expected an int, got 'lots'"));

  const PlanError unknown = plan_failure("name: x\nbase:\n  profile:\n    steps: 3\n    step: 4\n");
  CHECK(unknown.line == 5);
  CHECK(unknown.col == 5);
  CHECK(unknown.key_path == "base.profile.step");
  CHECK_THAT(unknown.what(), Contains("unknown key 'step'"));
  CHECK_THAT(unknown.what(), Contains("allowed: steps"));

  const PlanError scalar = plan_failure("name: x\nbase:\n  profile: 5\n");
  CHECK(scalar.line == 3);
  CHECK_THAT(scalar.what(), Contains("expected a mapping"));

  const PlanError axis = plan_failure("name: x\nmatrix:\n  profile.trace: [a]\n");
  CHECK(axis.line == 3);
  CHECK(axis.col == 3);
  CHECK_THAT(axis.what(), Contains("unknown key 'trace' in 'profile'"));

  const PlanError override_error =
      plan_failure("name: x\n", PlanOptions{{"profile.steps=1000"}, 10000});
  CHECK_THAT(override_error.what(), Contains("<override>:1:"));
  CHECK_THAT(override_error.what(), Contains("1000 is above the maximum 100"));
}

}  // namespace
}  // namespace orch
