// The Store's typed reads that the report, the MLflow export, the plan estimate and the sweep
// use instead of the raw database: the plan revisions through the Store.
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "storage/sweep_plans.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using orch::test::TempDb;

namespace {

SweepPlan plan_of(const std::string& hash, int repeats) {
  SweepPlan p;
  p.experiment_file = "exp.yaml";
  p.configs = {{hash, "fp32", repeats, {{"measure", 50}}}};
  return p;
}

}  // namespace

TEST_CASE("Store plan methods: revisions recorded, read and their warnings replaced",
          "[store][revisions]") {
  TempDb db;
  Store store(db.path);
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  CHECK_FALSE(store.latest_plan(id));
  CHECK(store.plan_revisions(id) == 0);
  // No revision: nothing to keep the warnings with, and nothing is written.
  CHECK(store.set_latest_plan_warnings(id, {"persistence mode is off"}) == 0);
  CHECK(store.plan_revisions(id) == 0);

  CHECK(store.record_plan(id, plan_of("h1", 3)) == 1);
  CHECK(store.record_plan(id, plan_of("h2", 5)) == 2);
  CHECK(store.plan_revisions(id) == 2);
  const auto latest = store.latest_plan(id);
  REQUIRE(latest);
  CHECK(latest->revision == 2);
  REQUIRE(latest->configs.size() == 1);
  CHECK(latest->configs[0].hash == "h2");
  CHECK(latest->configs[0].repeats == 5);
  const auto first = store.plan_revision(id, 1);
  REQUIRE(first);
  CHECK(first->configs[0].hash == "h1");
  CHECK_FALSE(store.plan_revision(id, 0));
  CHECK_FALSE(store.plan_revision(id, 3));

  // Only the latest revision's warnings change.
  CHECK(store.set_latest_plan_warnings(id, {"persistence mode is off"}) == 2);
  CHECK(store.latest_plan(id)->warnings == std::vector<std::string>{"persistence mode is off"});
  CHECK(store.plan_revision(id, 1)->warnings.empty());
}
