// Night against night: Welch's t-test, pairing by hash across sweeps, environment differences
// first; and the runs read commands show for a sweep with plan revisions.
#include <catch2/catch.hpp>
#include <set>

#include "report/input_error.h"
#include "report/shown_runs.h"
#include "report/sweep_diff.h"
#include "storage/sweep_plans.h"
#include "storage/welch.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

using Catch::Matchers::Contains;
using storage::summarize;
using test::result_doc;
using test::TempDb;

TEST_CASE("welch: significant differences and not", "[report][nights]") {
  // By hand: variances of the means 100/3 and 800/12, so se = 10 and t = 100 / 10;
  // Welch-Satterthwaite dof = 100^2 / ((100/3)^2 / 2 + (200/3)^2 / 3) = 4.909...
  const auto a = summarize({1000, 1010, 990});
  const auto b = summarize({1100, 1120, 1080, 1100});
  const auto r = storage::welch_test_95(a, b);
  REQUIRE(r);
  CHECK(r->t == Approx(10.0));
  CHECK(r->dof == Approx(4.9090909));
  // t(0.975) at a fractional dof: between its values at 5 (2.571) and 4 (2.776) dof.
  CHECK(r->critical > 2.571);
  CHECK(r->critical < 2.776);
  CHECK(r->significant);
  const auto close =
      storage::welch_test_95(summarize({1000, 1040, 960}), summarize({1010, 1050, 970}));
  REQUIRE(close);
  CHECK_FALSE(close->significant);
  CHECK_FALSE(storage::welch_test_95(summarize({1000}), summarize({1000, 1001})));
  // No spread at all: different means differ, equal ones do not.
  CHECK(storage::welch_test_95(summarize({5, 5}), summarize({6, 6}))->significant);
  CHECK_FALSE(storage::welch_test_95(summarize({5, 5}), summarize({5, 5}))->significant);
}

storage::RunRecord run(const std::string& name, const std::string& hash, double ips,
                       const std::string& driver = "580.65") {
  storage::RunRecord r;
  r.name = name;
  r.config_hash = hash;
  r.status = "ok";
  r.metrics["images_per_s"] = ips;
  r.driver_version = driver;
  r.gpu_name = "NVIDIA H200";
  r.torch_version = "2.11.0";
  return r;
}

TEST_CASE("sweep diff: paired by hash, judged by Welch at 95%", "[report][nights]") {
  const std::vector<storage::RunRecord> a = {run("fast", "h1", 1000), run("fast", "h1", 1010),
                                             run("fast", "h1", 990),  run("same", "h2", 500),
                                             run("same", "h2", 520),  run("same", "h2", 480),
                                             run("one", "h3", 700),   run("gone", "h4", 100)};
  const std::vector<storage::RunRecord> b = {
      run("fast", "h1", 1100, "590.10"), run("fast", "h1", 1120, "590.10"),
      run("fast", "h1", 1080, "590.10"), run("same", "h2", 505, "590.10"),
      run("same", "h2", 515, "590.10"),  run("same", "h2", 495, "590.10"),
      run("one", "h3", 690, "590.10"),   run("new", "h5", 10, "590.10")};
  const SweepDiff d = diff_sweeps(a, b);
  REQUIRE(d.environment.size() == 1);
  CHECK(d.environment[0].fact == "driver");
  CHECK(d.environment[0].a == "580.65");
  CHECK(d.environment[0].b == "590.10");
  REQUIRE(d.configs.size() == 3);
  CHECK(d.configs[0].name == "fast");
  CHECK(d.configs[0].verdict == "faster");
  CHECK(*d.configs[0].change_pct == Approx(10.0));
  CHECK(d.configs[1].name == "one");
  CHECK(d.configs[1].verdict == "not enough repeats");
  CHECK(d.configs[2].name == "same");
  CHECK(d.configs[2].verdict == "no change");
  CHECK(d.only_a == std::vector<std::string>{"gone"});
  CHECK(d.only_b == std::vector<std::string>{"new"});

  const std::string t = format_sweep_diff(d, "nightly-2026-03-06", "nightly-2026-03-07");
  // Environment first, then the table, then the rule used.
  const auto env = t.find("driver  580.65 -> 590.10");
  const auto table = t.find("configuration");
  REQUIRE(env != std::string::npos);
  REQUIRE(table != std::string::npos);
  CHECK(env < table);
  CHECK_THAT(t, Contains("+10.0%") && Contains("faster") && Contains("no change") &&
                    Contains("Welch's t-test") && Contains("95%") &&
                    Contains("only in A (not compared): gone") &&
                    Contains("only in B (not compared): new"));
  CHECK_THAT(format_sweep_diff(diff_sweeps(a, a), "x", "y"),
             Contains("environment: the same driver"));
}

TEST_CASE("shown runs: the latest plan revision by default", "[report][nights]") {
  TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  store.record(id, result_doc("fp32", "h1", 0));
  store.record(id, result_doc("amp", "h2", 0));
  store.record(id, result_doc("amp", "h3", 0));  // the same name, other settings
  const auto sweep = *store.sweep(id);

  // No revision: everything, the shared name told apart by hash.
  ShownRuns none = shown_runs(store, sweep);
  CHECK(none.runs.size() == 3);
  CHECK(none.revision == 0);
  CHECK_THAT(none.note, Contains("name@hash"));
  std::set<std::string> names;
  for (const auto& r : none.runs) names.insert(r.name);
  CHECK(names == std::set<std::string>{"fp32", "amp@h2", "amp@h3"});
  CHECK_THROWS_AS(shown_runs(store, sweep, 1), InputError);

  storage::SweepPlan one;
  one.configs = {{"h1", "fp32", 1, {}}, {"h2", "amp", 1, {}}};
  storage::record_plan(store.database(), id, one);
  storage::SweepPlan two;
  two.configs = {{"h1", "fp32", 1, {}}, {"h3", "amp", 1, {}}};
  storage::record_plan(store.database(), id, two);

  ShownRuns latest = shown_runs(store, sweep);
  CHECK(latest.revision == 2);
  CHECK(latest.revisions == 2);
  REQUIRE(latest.runs.size() == 2);
  for (const auto& r : latest.runs) CHECK(r.config_hash != "h2");
  CHECK_THAT(latest.note,
             Contains("plan revision 2 of 2") && Contains("1 run of other revisions not shown"));
  ShownRuns first = shown_runs(store, sweep, 1);
  REQUIRE(first.runs.size() == 2);
  for (const auto& r : first.runs) CHECK(r.config_hash != "h3");
  CHECK_THROWS_WITH(shown_runs(store, sweep, 3), Contains("plan revisions 1..2, not 3"));
}

}  // namespace
}  // namespace orch
