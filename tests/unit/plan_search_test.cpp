// `search:` in the experiment file and successive halving's arithmetic: the key's errors at
// their line and column, the rungs a plan gets, each rung's entrants, steps and repeats, and
// the runs of a configuration in a rung.
#include <catch2/catch.hpp>

#include "plan/halving_schedule.h"
#include "plan/halving_table.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using Catch::Contains;

// `n` configurations (batch sizes 1..n) measured `measure` steps, `repeat` times.
std::string matrix_of(int n, int measure = 50, int repeat = 1, const std::string& search = "") {
  std::string batches;
  for (int i = 1; i <= n; ++i) batches += (i > 1 ? ", " : "") + std::to_string(i);
  return "name: s\nbase: {device: cpu, repeat: " + std::to_string(repeat) +
         ", steps: {warmup: 2, measure: " + std::to_string(measure) +
         "}}\nmatrix:\n  batch_size: [" + batches + "]\n" + search;
}

TEST_CASE("search: grid is the default, halving is read with its settings", "[plan][search]") {
  CHECK_FALSE(test::plan_text(matrix_of(3)).search.halving());
  CHECK_FALSE(test::plan_text(matrix_of(3, 50, 1, "search: {method: grid}\n")).search.halving());
  const Plan p = test::plan_text(matrix_of(
      3, 50, 1, "search: {method: halving, eta: 4, rungs: 2, min_steps: 7, rung_repeat: 2}\n"));
  REQUIRE(p.search.halving());
  CHECK(p.search.eta == 4);
  CHECK(p.search.rungs == 2);
  CHECK(p.search.min_steps == 7);
  CHECK(p.search.rung_repeat == 2);
  const Plan d = test::plan_text(matrix_of(3, 50, 1, "search: {method: halving}\n"));
  CHECK(d.search.eta == kDefaultEta);
  CHECK_FALSE(d.search.rungs);
  CHECK_FALSE(d.search.min_steps);
}

TEST_CASE("search: each bad entry is refused at its line and column", "[plan][search][errors]") {
  struct Case {
    std::string search, where, says;
  };
  const std::vector<Case> cases = {
      {"search: {method: halfing}\n", "test.yaml:5:18", "did you mean 'halving'"},
      {"search: {method: halving, eta: 1}\n", "test.yaml:5:32", "at least 2"},
      {"search: {method: halving, eta: three}\n", "test.yaml:5:32", "expected a whole number"},
      {"search: {method: halving, rungs: 0}\n", "test.yaml:5:34", "at least 1"},
      {"search: {method: halving, min_steps: 2.5}\n", "test.yaml:5:38", "whole number"},
      {"search: {method: halving, etta: 3}\n", "test.yaml:5:27", "did you mean 'eta'"},
      {"search: {method: grid, eta: 3}\n", "test.yaml:5:24", "a setting of successive halving"},
      {"search: halving\n", "test.yaml:5:9", "expected a mapping"},
  };
  for (const Case& c : cases) {
    const PlanError e = test::plan_failure(matrix_of(3, 50, 1, c.search));
    INFO(c.search << " -> " << e.what());
    CHECK_THAT(std::string(e.what()), Contains(c.where) && Contains(c.says));
  }
  // All of one mapping's problems at once.
  try {
    test::plan_text(matrix_of(3, 50, 1, "search: {method: halving, eta: 0, rungs: -1}\n"));
    FAIL("planned");
  } catch (const PlanErrors& e) {
    CHECK(e.errors.size() == 2);
  }
}

TEST_CASE("halving: rungs until at most eta are left, each keeping ceil(n / eta)",
          "[plan][search][halving]") {
  SearchSpec s;
  s.method = SearchSpec::Method::halving;
  const HalvingSchedule h = halving_schedule(s, 24, 3);
  REQUIRE(h.count() == 3);
  CHECK(h.rungs[0].entrants == 24);
  CHECK(h.rungs[0].keep == 8);
  CHECK(h.rungs[1].entrants == 8);
  CHECK(h.rungs[1].keep == 3);
  CHECK(h.rungs[2].entrants == 3);
  CHECK(h.rungs[2].last);
  // Short rungs once each; the last rung the file's repeats.
  CHECK(h.rungs[0].repeats == 1);
  CHECK(h.rungs[1].repeats == 1);
  CHECK(h.rungs[2].repeats == 3);
  // 50 steps in full: rung 0 measures 50/eta^2 rounded up, each rung eta times more.
  CHECK(h.steps(0, 50) == 6);
  CHECK(h.steps(1, 50) == 18);
  CHECK(h.steps(2, 50) == 50);
  // Never fewer than kMinRungSteps unless the full measurement is shorter.
  CHECK(h.steps(0, 20) == kMinRungSteps);
  CHECK(h.steps(0, 3) == 3);

  s.eta = 2;
  const HalvingSchedule two = halving_schedule(s, 10, 1);
  std::vector<std::size_t> entrants;
  for (const Rung& r : two.rungs) entrants.push_back(r.entrants);
  CHECK(entrants == std::vector<std::size_t>{10, 5, 3, 2});
  // At most eta configurations: nothing to cut, the grid's one rung.
  CHECK(halving_schedule(s, 2, 1).count() == 1);
}

TEST_CASE("halving: written rungs, min_steps and rung_repeat; more rungs than useful are cut",
          "[plan][search][halving]") {
  SearchSpec s;
  s.method = SearchSpec::Method::halving;
  s.rungs = 2;
  s.min_steps = 4;
  s.rung_repeat = 2;
  const HalvingSchedule h = halving_schedule(s, 24, 3);
  REQUIRE(h.count() == 2);
  CHECK(h.rungs[0].keep == 8);
  CHECK(h.rungs[0].repeats == 2);
  CHECK(h.steps(0, 50) == 4);
  CHECK(h.steps(1, 50) == 50);
  CHECK(h.note.empty());
  // A rung repeats no more than the full measurement does.
  CHECK(halving_schedule(s, 24, 1).rungs[0].repeats == 1);
  // min_steps over the full measurement is capped at it.
  s.rungs = 3;
  s.min_steps = 30;
  CHECK(halving_schedule(s, 24, 1).steps(1, 50) == 50);
  s.rungs = 9;
  const HalvingSchedule capped = halving_schedule(s, 5, 1);
  CHECK(capped.count() == 3);  // 5 -> 2 -> 1
  CHECK_THAT(capped.note, Contains("9 rungs asked for, 3 used"));
}

TEST_CASE("halving: a rung's run is a shorter run of its own; the last rung's is the grid's",
          "[plan][search][halving]") {
  const Plan p = test::plan_text(matrix_of(9, 50, 2, "search: {method: halving}\n"));
  const HalvingSchedule h = halving_schedule(p);
  REQUIRE(h.count() == 2);  // 9 -> 3
  const RunSpec& full = p.runs[0];
  const RunSpec r0 = rung_run(full, h, 0, 0);
  CHECK(r0.name == full.name);
  CHECK(r0.hash != full.hash);
  CHECK(r0.hash == rung_run(full, h, 0, 0).hash);  // the same on every call: resume finds it
  CHECK(r0.hash == rung_hash(full.hash, 0, 17));
  CHECK(r0.measure_steps == 17);
  CHECK(r0.config.json()["steps"]["measure"] == 17);
  CHECK(r0.config.json()["search"]["rung"] == 0);
  CHECK(r0.config.json()["search"]["configuration"] == full.hash);
  CHECK(r0.warmup_steps == full.warmup_steps);
  CHECK(rung_run(p.runs[2], h, 0, 0).hash != r0.hash);  // another configuration
  const RunSpec last = rung_run(full, h, 1, 1);
  CHECK(last.hash == full.hash);
  CHECK(last.config == full.config);
  CHECK(last.repeat == 1);
}

TEST_CASE("halving: orch plan shows the rungs and the runs beside the grid's",
          "[plan][search][halving]") {
  const Plan p = test::plan_text(matrix_of(24, 50, 3, "search: {method: halving}\n"));
  const std::string text = format_halving_schedule(p);
  INFO(text);
  CHECK_THAT(text, Contains("rung 0: 24 configurations x 6 measured steps x 1 repeat, keep 8"));
  CHECK_THAT(text, Contains("rung 1: 8 configurations x 18 measured steps x 1 repeat, keep 3"));
  CHECK_THAT(text, Contains("rung 2: 3 configurations x 50 measured steps x 3 repeats (the full"));
  // 24 + 8 + 9 runs; 24x6 + 8x18 + 9x50 steps; the grid 72 runs of 50.
  CHECK_THAT(text, Contains("41 runs and 738 measured steps (the grid: 72 runs, 3600 steps)"));
  CHECK(format_halving_schedule(test::plan_text(matrix_of(24))).empty());
}

}  // namespace
}  // namespace orch
