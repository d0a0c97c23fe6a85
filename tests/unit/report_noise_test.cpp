// Noise said honestly: a configuration whose 95% interval reaches further than ±10% of its mean
// is NOISY in rank and the report, never leads a tie it would only win by its spread; a
// difference two nights cannot tell apart reads "inconclusive (n=...)", never "no change"; and
// `orch compare A B` judges its throughput by Welch's test.
#include <catch2/catch.hpp>
#include <regex>

#include "analysis/statistics.h"
#include "report/compare.h"
#include "report/metric_catalog.h"
#include "report/rank_table.h"
#include "report/ranking.h"
#include "report/sweep_diff.h"
#include "storage/store.h"

namespace orch {
namespace {

using Catch::Matchers::Contains;

storage::RunRecord run(const std::string& name, double ips) {
  storage::RunRecord r;
  r.name = name;
  r.config_hash = "hash-" + name;
  r.status = "ok";
  r.metrics["images_per_s"] = ips;
  r.metrics["step_ms_mean"] = 1000.0 / ips;
  return r;
}

std::vector<storage::RunRecord> runs_of(const std::string& name, std::vector<double> values) {
  std::vector<storage::RunRecord> out;
  for (double v : values) out.push_back(run(name, v));
  return out;
}

void append(std::vector<storage::RunRecord>& to, const std::vector<storage::RunRecord>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

TEST_CASE("noisy: the interval's half-width over 10% of the mean", "[report][noise]") {
  // 100, 101, 102: ± 2.48 (2.5%), steady. 80, 100, 120: ± 49.7 (50%), noisy.
  CHECK_FALSE(analysis::is_noisy(analysis::summarize({100, 101, 102})));
  CHECK(*analysis::relative_ci95(analysis::summarize({100, 101, 102})) ==
        Approx(0.0246).epsilon(0.01));
  CHECK(analysis::is_noisy(analysis::summarize({80, 100, 120})));
  // A single run has no interval: not noisy, and nothing to judge.
  CHECK_FALSE(analysis::is_noisy(analysis::summarize({100})));
  CHECK_FALSE(analysis::relative_ci95(analysis::summarize({100})));
}

TEST_CASE("rank: a noisy configuration is marked and cannot win a tie", "[report][noise]") {
  // "wild" has the highest mean (105 ± 49.7, noisy) and overlaps "steady" (100 ± 2.5):
  // by its mean it would lead, but only its spread lets it; "steady" leads, "wild" is a tie
  // marked NOISY. "slow" (50 ± 2.5) is steady and far below both.
  std::vector<storage::RunRecord> runs = runs_of("wild", {85, 105, 125});
  append(runs, runs_of("steady", {99, 100, 101}));
  append(runs, runs_of("slow", {49, 50, 51}));
  const auto ranking = rank_runs(runs, require_metric("images_per_s"));
  REQUIRE(ranking.rows.size() == 3);
  CHECK(ranking.rows[0].name == "steady");
  CHECK(ranking.rows[0].position == 1);
  CHECK_FALSE(ranking.rows[0].noisy);
  CHECK(ranking.rows[1].name == "wild");
  CHECK(ranking.rows[1].position == 2);
  CHECK(ranking.rows[1].noisy);
  CHECK(ranking.rows[1].tie);
  CHECK(ranking.rows[2].name == "slow");
  // The speed-up still divides by the slowest mean, and the noisy one's is its own.
  CHECK(ranking.rows[1].speedup == Approx(ranking.rows[1].stats.mean / 50));
  CHECK_THAT(diagnosis_column(ranking.rows[1]), Contains("NOISY (±47%)"));
  CHECK(diagnosis_column(ranking.rows[0]) == "-");

  storage::SweepInfo sweep;
  sweep.id = 1;
  sweep.name = "night";
  sweep.experiment = "exp";
  const std::string t = format_rank_table(ranking, sweep);
  INFO(t);
  CHECK(std::regex_search(t, std::regex(R"(\n +1  steady .*\n +2  wild .*tie.*NOISY \(±47%\))")));
  CHECK_THAT(t, Contains("NOISY: the 95% interval reaches further than ±10% of the mean"));

  // A noisy leader that no steady configuration overlaps keeps its place, marked.
  std::vector<storage::RunRecord> clear = runs_of("wild", {180, 200, 230});
  append(clear, runs_of("steady", {99, 100, 101}));
  const auto ahead = rank_runs(clear, require_metric("images_per_s"));
  CHECK(ahead.rows[0].name == "wild");
  CHECK(ahead.rows[0].noisy);
  CHECK_FALSE(ahead.rows[1].tie);

  // Without noise, nothing moves: the order is the means'.
  std::vector<storage::RunRecord> calm = runs_of("a", {101, 102, 103});
  append(calm, runs_of("b", {100, 101, 102}));
  const auto by_mean = rank_runs(calm, require_metric("images_per_s"));
  CHECK(by_mean.rows[0].name == "a");
  CHECK(by_mean.rows[1].tie);
  CHECK_THAT(format_rank_table(by_mean, sweep), !Contains("NOISY"));
}

TEST_CASE("compare: a difference that is not significant is inconclusive, never no change",
          "[report][noise]") {
  // "close" differs by 1% within its noise; "wild" is noisy on night B; "single" has one run.
  std::vector<storage::RunRecord> a = runs_of("close", {100, 102, 98});
  append(a, runs_of("wild", {100, 101, 99}));
  append(a, runs_of("single", {100}));
  std::vector<storage::RunRecord> b = runs_of("close", {101, 103, 99});
  append(b, runs_of("wild", {75, 100, 125}));
  append(b, runs_of("single", {90}));
  const SweepDiff d = diff_sweeps(a, b);
  REQUIRE(d.configs.size() == 3);
  CHECK(d.configs[0].name == "close");
  CHECK(d.configs[0].verdict == "inconclusive (n=3)");
  CHECK_FALSE(d.configs[0].noisy_b);
  CHECK(d.configs[1].name == "single");
  CHECK(d.configs[1].verdict == "not enough repeats");
  CHECK(d.configs[2].name == "wild");
  CHECK(d.configs[2].verdict == "inconclusive (n=3)");
  CHECK(d.configs[2].noisy_b);
  CHECK_FALSE(d.configs[2].noisy_a);
  const std::string t = format_sweep_diff(d, "a", "b");
  INFO(t);
  CHECK_THAT(t, !Contains("  no change"));  // as a verdict; the footnote says what it is not
  CHECK(std::regex_search(t, std::regex(R"(\nwild .* inconclusive \(n=3\); B NOISY \(±62%\)\n)")));
  CHECK_THAT(t, Contains("inconclusive: it is not at this n, which is not the same as no change"));
  CHECK_THAT(t, Contains("NOISY: that side's 95% interval reaches further than ±10%"));
  // Unequal counts say both.
  CHECK(judge_change(analysis::summarize({100, 101, 99}), analysis::summarize({100, 102})) ==
        "inconclusive (n=3 vs 2)");
  CHECK(judge_change(analysis::summarize({100, 101, 99}), analysis::summarize({90, 91, 89})) ==
        "slower");
  CHECK(judge_change(analysis::summarize({}), analysis::summarize({90, 91})) ==
        "no successful run");
}

TEST_CASE("compare A B ends with the throughput's verdict", "[report][noise]") {
  auto selection = [](const std::string& name, std::vector<double> values) {
    Selection s;
    s.label = name;
    s.config_hash = "hash-" + name;
    s.runs = runs_of(name, std::move(values));
    return s;
  };
  CHECK(throughput_verdict(selection("a", {100, 101, 99}), selection("b", {110, 111, 109})) ==
        "throughput: B is 10.0% faster than A, significant at 95% (Welch's t-test, n=3 vs 3)\n");
  CHECK_THAT(throughput_verdict(selection("a", {100, 102, 98}), selection("b", {101, 103, 99})),
             Contains("throughput: inconclusive (n=3 vs 3): the difference is not significant"));
  CHECK_THAT(throughput_verdict(selection("a", {100}), selection("b", {50})),
             Contains("throughput: inconclusive (n=1 vs 1): a side with one run"));
  const std::string noisy =
      throughput_verdict(selection("a", {100, 101, 99}), selection("b", {75, 100, 125}));
  CHECK_THAT(noisy, Contains("B is NOISY: its 95% interval is ±62% of its mean (more than ±10%)"));
  CHECK_THAT(noisy, !Contains("A is NOISY"));
  CHECK_THAT(format_comparison(selection("a", {100, 101, 99}), selection("b", {90, 91, 89})),
             Contains("throughput: B is 10.0% slower than A"));
}

}  // namespace
}  // namespace orch
