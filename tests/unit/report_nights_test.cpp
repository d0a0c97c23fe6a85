// Night against night: Welch's t-test, pairing by hash across sweeps, environment differences
// first; and the runs read commands show for a sweep with plan revisions.
#include <catch2/catch.hpp>
#include <map>
#include <regex>
#include <set>

#include "analysis/welch.h"
#include "report/input_error.h"
#include "report/shown_runs.h"
#include "report/sweep_diff.h"
#include "storage/sweep_plans.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

using analysis::summarize;
using Catch::Matchers::Contains;
using test::result_doc;
using test::TempDb;

TEST_CASE("welch: significant differences and not", "[report][nights]") {
  // By hand: variances of the means 100/3 and 800/12, so se = 10 and t = 100 / 10;
  // Welch-Satterthwaite dof = 100^2 / ((100/3)^2 / 2 + (200/3)^2 / 3) = 4.909...
  const auto a = summarize({1000, 1010, 990});
  const auto b = summarize({1100, 1120, 1080, 1100});
  const auto r = analysis::welch_test_95(a, b);
  REQUIRE(r);
  CHECK(r->t == Approx(10.0));
  CHECK(r->dof == Approx(4.9090909));
  // t(0.975) at a fractional dof: between its values at 5 (2.571) and 4 (2.776) dof.
  CHECK(r->critical > 2.571);
  CHECK(r->critical < 2.776);
  CHECK(r->significant);
  const auto close =
      analysis::welch_test_95(summarize({1000, 1040, 960}), summarize({1010, 1050, 970}));
  REQUIRE(close);
  CHECK_FALSE(close->significant);
  CHECK_FALSE(analysis::welch_test_95(summarize({1000}), summarize({1000, 1001})));
  // No spread at all: different means differ, equal ones do not.
  CHECK(analysis::welch_test_95(summarize({5, 5}), summarize({6, 6}))->significant);
  CHECK_FALSE(analysis::welch_test_95(summarize({5, 5}), summarize({5, 5}))->significant);
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
  REQUIRE(d.environment.changes.size() == 1);
  CHECK(d.environment.changes[0].fact == "driver");
  CHECK(d.environment.changes[0].a == "580.65");
  CHECK(d.environment.changes[0].b == "590.10");
  REQUIRE(d.configs.size() == 3);
  CHECK(d.configs[0].name == "fast");
  CHECK(d.configs[0].verdict == "faster");
  CHECK(*d.configs[0].change_pct == Approx(10.0));
  CHECK(d.configs[1].name == "one");
  CHECK(d.configs[1].verdict == "not enough repeats");
  CHECK(d.configs[2].name == "same");
  CHECK(d.configs[2].verdict == "inconclusive (n=3)");
  CHECK(d.only_a == std::vector<std::string>{"gone"});
  CHECK(d.only_b == std::vector<std::string>{"new"});

  const std::string t = format_sweep_diff(d, "nightly-2026-03-06", "nightly-2026-03-07");
  // Environment first, then the table, then the rule used.
  const auto env = t.find("driver  580.65 -> 590.10");
  const auto table = t.find("\nconfiguration ");
  REQUIRE(env != std::string::npos);
  REQUIRE(table != std::string::npos);
  CHECK(env < table);
  CHECK_THAT(t, Contains("+10.0%") && Contains("faster") && Contains("inconclusive (n=3)") &&
                    Contains("Welch's t-test") && Contains("95%") &&
                    Contains("only in A (not compared): gone") &&
                    Contains("only in B (not compared): new"));
  CHECK_THAT(t, Contains("DIFFERENT ENVIRONMENTS: 1 of 3 recorded fields differ"));
  CHECK_THAT(format_sweep_diff(diff_sweeps(a, a), "x", "y"),
             Contains("environment: the same in all 3 recorded fields (GPU, driver, LibTorch)"));
}

// The night that ran with OMP_NUM_THREADS=1: the variable and torch's threads are what differ,
// whatever else the runs recorded; fields a run's own environment has are compared too.
storage::RunRecord run_in(const std::string& name, double ips, const nlohmann::json& env) {
  storage::RunRecord r = run(name, "h" + name, ips);
  r.environment = env;
  return r;
}

TEST_CASE("sweep diff: every recorded environment field, variables unset or set",
          "[report][nights]") {
  const nlohmann::json night1 = {{"hostname", "box"},
                                 {"cpu_model", "Ryzen"},
                                 {"torch_threads", 2},
                                 {"git_revision", "5c844b2"},
                                 {"cudnn_version", 91900},
                                 {"cuda_runtime_version", 13000},
                                 {"variables", nlohmann::json::object()},
                                 {"pcie", {{"gen_current", 5}, {"gen_max", 5}}},
                                 {"gpu_other_processes", nlohmann::json::array()},
                                 {"code", {{"git_commit", "abc"}, {"dirty", false}}}};
  nlohmann::json night2 = night1;
  night2["torch_threads"] = 1;
  night2["variables"]["OMP_NUM_THREADS"] = "1";
  // An idle GPU lowers its link, and another night's neighbour has another pid: not differences.
  night2["pcie"]["gen_current"] = 3;
  nlohmann::json night3 = night2;
  night3["code"]["dirty"] = true;
  night3["gpu_other_processes"] =
      nlohmann::json::array({nlohmann::json{{"pid", 4242}, {"name", "python"}}});
  night3["gpu_memory_cap_bytes"] = 8LL << 30;

  const std::vector<storage::RunRecord> a = {run_in("x", 100, night1), run_in("x", 101, night1)};
  const std::vector<storage::RunRecord> b = {run_in("x", 70, night2), run_in("x", 71, night2)};
  const SweepDiff d = diff_sweeps(a, b);
  std::map<std::string, std::pair<std::string, std::string>> changes;
  for (const auto& c : d.environment.changes) changes[c.fact] = {c.a, c.b};
  CHECK(changes.size() == 2);
  CHECK(changes["torch threads"] == std::make_pair(std::string("2"), std::string("1")));
  CHECK(changes["OMP_NUM_THREADS"] == std::make_pair(std::string("unset"), std::string("1")));
  const std::string t = format_sweep_diff(d, "night-1", "night-2");
  CHECK_THAT(t, Contains("DIFFERENT ENVIRONMENTS: 2 of") && Contains("between the sweeps"));
  CHECK(std::regex_search(t, std::regex(R"(\n  OMP_NUM_THREADS +unset -> 1\n)")));
  CHECK(std::regex_search(t, std::regex(R"(\n  torch threads +2 -> 1\n)")));
  CHECK_THAT(t, !Contains("environment: the same"));

  const auto c = compare_environments(b, {run_in("x", 70, night3)});
  std::map<std::string, std::pair<std::string, std::string>> more;
  for (const auto& e : c.changes) more[e.fact] = {e.a, e.b};
  CHECK(more.size() == 3);
  CHECK(more["your code's uncommitted changes"] ==
        std::make_pair(std::string("no"), std::string("yes")));
  CHECK(more["other processes on the GPU"] == std::make_pair(std::string("0"), std::string("1")));
  CHECK(more["GPU memory cap"] ==
        std::make_pair(std::string("not recorded"), std::string("8.0 GiB")));
  // Versions read as the report reads them.
  bool cudnn = false;
  for (const auto& f : c.compared) cudnn = cudnn || f == "cuDNN";
  CHECK(cudnn);
  const auto same = compare_environments(a, a);
  CHECK(same.changes.empty());
  CHECK_THAT(format_environment_comparison(same, "sweeps"), Contains("CPU") && Contains("host"));
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
