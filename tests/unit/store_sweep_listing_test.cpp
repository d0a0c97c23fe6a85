// The latest sweep and the sweep listing (`orch sweeps`): the latest is the one whose run
// started last, not the one opened last; the listing counts the runs of each sweep's latest
// plan revision, as rank and compare show them.
#include <catch2/catch.hpp>

#include "report/sweep_choice.h"
#include "report/sweep_listing.h"
#include "storage/store.h"
#include "storage/sweep_plans.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using Catch::Matchers::Contains;
using Catch::Matchers::Matches;
using orch::test::result_doc;
using orch::test::TempDb;

namespace {

void record_at(Store& store, std::int64_t sweep, const std::string& name, const std::string& hash,
               int repeat, const std::string& started_at, const std::string& status = "ok") {
  auto doc = result_doc(name, hash, repeat, status);
  doc["started_at"] = started_at;
  store.record(sweep, doc);
}

std::vector<std::string> names(const std::vector<SweepInfo>& sweeps) {
  std::vector<std::string> out;
  for (const auto& s : sweeps) out.push_back(s.name);
  return out;
}

SweepPlan plan_of(std::vector<PlannedConfig> configs) {
  SweepPlan p;
  p.configs = std::move(configs);
  return p;
}

}  // namespace

TEST_CASE("the latest sweep is the one whose run started last; a resume does not move it",
          "[store][sweeps]") {
  TempDb db;
  Store store(db.path);
  const auto monday = store.open_sweep("monday", "exp", "exp.yaml");
  record_at(store, monday, "a", "h1", 0, "2026-11-30T23:00:00Z");
  const auto tuesday = store.open_sweep("tuesday", "exp", "exp.yaml");
  record_at(store, tuesday, "a", "h1", 0, "2026-12-01T23:00:00Z");
  record_at(store, tuesday, "a", "h1", 1, "2026-12-01T23:05:00Z");
  CHECK(names(store.sweeps()) == std::vector<std::string>{"tuesday", "monday"});
  CHECK(store.sweeps().front().last_run_at == "2026-12-01T23:05:00Z");

  // Monday's sweep run again with nothing left to do: opened (updated_at moves), no run starts.
  store.open_sweep("monday", "exp", "exp.yaml");
  CHECK(names(store.sweeps()) == std::vector<std::string>{"tuesday", "monday"});
  CHECK(orch::choose_sweep(store, "").name == "tuesday");
  CHECK(orch::choose_sweep(store, "", "exp").name == "tuesday");

  // A run of Monday's that starts now (a retry) does make it the latest.
  record_at(store, monday, "a", "h1", 1, "2026-12-02T08:00:00Z", "failed");
  CHECK(names(store.sweeps()) == std::vector<std::string>{"monday", "tuesday"});
  CHECK(orch::describe_sweep(store.sweeps().front()) ==
        "sweep monday (experiment exp, exp.yaml), last run started 2026-12-02T08:00:00Z");

  // A sweep without runs counts from its creation (now, after every run above).
  store.open_sweep("empty", "other", "");
  const auto all = store.sweeps();
  CHECK(names(all) == std::vector<std::string>{"empty", "monday", "tuesday"});
  CHECK(all.front().last_run_at.empty());
  CHECK_THAT(orch::describe_sweep(all.front()),
             Matches("sweep empty \\(experiment other\\), created 20[0-9-]+T[0-9:]+Z, no run yet"));
  CHECK(store.sweep(tuesday)->last_run_at == "2026-12-01T23:05:00Z");
}

TEST_CASE("the sweep listing counts the latest plan revision's runs", "[store][sweeps]") {
  TempDb db;
  Store store(db.path);
  const auto night = store.open_sweep("night", "exp", "exp.yaml");
  record_plan(store.database(), night, plan_of({{"h1", "fp32", 2, {}}, {"h2", "amp", 2, {}}}));
  record_at(store, night, "fp32", "h1", 0, "2026-12-01T23:00:00Z");
  record_at(store, night, "fp32", "h1", 1, "2026-12-01T23:01:00Z", "oom");
  record_at(store, night, "amp", "h2", 0, "2026-12-01T23:02:00Z");
  record_at(store, night, "amp", "h2", 1, "2026-12-01T23:03:00Z", "failed");
  // Revision 2 drops amp and keeps one repeat of fp32: only h1 repeat 0 is its.
  record_plan(store.database(), night, plan_of({{"h1", "fp32", 1, {}}}));
  const auto old = store.open_sweep("old", "exp", "");  // from before plan revisions
  record_at(store, old, "fp32", "h1", 0, "2026-11-01T23:00:00Z");
  record_at(store, old, "amp", "h2", 0, "2026-11-01T23:01:00Z", "timeout");

  const auto listing = store.sweep_listing();
  REQUIRE(listing.size() == 2);
  CHECK(listing[0].sweep.name == "night");
  CHECK(listing[0].revision == 2);
  CHECK(listing[0].runs == 1);
  CHECK(listing[0].ok == 1);
  CHECK(listing[0].not_ok() == 0);
  CHECK(listing[1].sweep.name == "old");
  CHECK(listing[1].revision == 0);
  CHECK(listing[1].runs == 2);
  CHECK(listing[1].ok == 1);
  CHECK(listing[1].not_ok() == 1);

  SECTION("as a table, the latest first") {
    const std::string text = orch::format_sweep_listing(listing);
    CHECK_THAT(text, Matches("sweep +experiment +created +last run started +runs +ok +not ok "
                             "+running +revision\n"
                             "night +exp +20[0-9T:-]+Z +2026-12-01T23:03:00Z +1 +1 +0 +0 +2\n"
                             "old +exp +20[0-9T:-]+Z +2026-11-01T23:01:00Z +2 +1 +1 +0 +-\n"));
  }
  SECTION("as JSON") {
    const auto j = orch::sweep_listing_json(listing);
    REQUIRE(j.size() == 2);
    CHECK(j[0]["name"] == "night");
    CHECK(j[0]["experiment_file"] == "exp.yaml");
    CHECK(j[0]["last_run_at"] == "2026-12-01T23:03:00Z");
    CHECK(j[0]["revision"] == 2);
    CHECK(j[1]["revision"].is_null());
    CHECK(j[1]["not_ok"] == 1);
  }
}

TEST_CASE("a running run counts as neither ok nor not ok, and an empty sweep lists no runs",
          "[store][sweeps]") {
  TempDb db;
  Store store(db.path);
  const auto s = store.open_sweep("s", "exp", "");
  const auto doc = result_doc("a", "h1", 0);
  store.begin_run(
      s, {{"experiment", doc["experiment"]}, {"run", doc["run"]}, {"config", doc["config"]}},
      "node1", 42, "0");
  record_at(store, s, "a", "h1", 1, "2026-12-01T23:00:00Z", "diverged");
  store.open_sweep("fresh", "exp", "");
  const auto listing = store.sweep_listing();
  REQUIRE(listing.size() == 2);
  const auto& running = listing[0].sweep.name == "s" ? listing[0] : listing[1];
  const auto& fresh = listing[0].sweep.name == "s" ? listing[1] : listing[0];
  CHECK(running.runs == 2);
  CHECK(running.running == 1);
  CHECK(running.ok == 0);
  CHECK(running.not_ok() == 1);
  CHECK(fresh.runs == 0);
  CHECK(fresh.sweep.last_run_at.empty());
}
