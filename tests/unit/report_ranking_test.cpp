// `orch rank`'s arithmetic and table: means, Student-t intervals on hand-computed values, ties
// with the leader, lower-is-better metrics, the metric catalogue, and agreement with the SQL
// ranking view.
#include <catch2/catch.hpp>
#include <cmath>

#include "analysis/statistics.h"
#include "report/input_error.h"
#include "report/metric_catalog.h"
#include "report/rank_table.h"
#include "report/ranking.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

storage::RunRecord run(const std::string& name, double ips, const std::string& status = "ok") {
  storage::RunRecord r;
  r.name = name;
  r.config_hash = "hash-" + name;
  r.status = status;
  if (status == "ok") {
    r.metrics["images_per_s"] = ips;
    r.metrics["step_ms_mean"] = 1000.0 / ips;
    r.metrics["data_wait_ms_mean"] = 0.25;
  }
  r.diagnosis = status == "ok" ? "compute-bound" : "";
  return r;
}

}  // namespace

TEST_CASE("Student t quantiles match the published table", "[report][stats]") {
  CHECK(analysis::t_quantile_975(1) == Approx(12.7062).epsilon(1e-5));
  CHECK(analysis::t_quantile_975(2) == Approx(4.3027).epsilon(1e-4));
  CHECK(analysis::t_quantile_975(10) == Approx(2.2281).epsilon(1e-4));
  CHECK(analysis::t_quantile_975(30) == Approx(2.0423).epsilon(1e-4));
  CHECK(analysis::t_quantile_975(1000) == Approx(1.9623).epsilon(1e-4));
  CHECK_THROWS(analysis::t_quantile_975(0));
}

TEST_CASE("mean, standard deviation and 95% interval of three values, by hand", "[report][stats]") {
  // 10, 12, 14: mean 12, s = 2, half-width = t(0.975, 2) * 2 / sqrt(3) = 4.302653 * 1.154701
  const auto s = analysis::summarize({10, 12, 14});
  CHECK(s.n == 3);
  CHECK(s.mean == Approx(12));
  REQUIRE(s.stddev);
  CHECK(*s.stddev == Approx(2));
  REQUIRE(s.ci95_half);
  CHECK(*s.ci95_half == Approx(4.968275).epsilon(1e-6));
  CHECK(s.lower() == Approx(12 - 4.968275));

  const auto one = analysis::summarize({7});
  CHECK(one.mean == 7);
  CHECK_FALSE(one.stddev);
  CHECK_FALSE(one.ci95_half);
  CHECK(analysis::summarize({}).n == 0);
}

TEST_CASE("configurations are ranked by mean with ties against the leader", "[report][rank]") {
  // A: 100, 110, 120 -> 110 ± 24.84; B: 90, 95, 100 -> 95 ± 12.42 (overlaps A: tie);
  // C: 10, 11, 12 -> 11 ± 2.48 (no overlap); D: failed only (not ranked).
  std::vector<storage::RunRecord> runs = {
      run("A", 100), run("A", 110), run("A", 120), run("B", 90), run("B", 95),
      run("B", 100), run("C", 10),  run("C", 11),  run("C", 12), run("D", 0, "failed")};
  const auto ranking = rank_runs(runs, require_metric("images_per_s"));
  REQUIRE(ranking.rows.size() == 3);
  CHECK(ranking.unranked == 1);
  CHECK(ranking.ok_runs == 9);
  const auto& a = ranking.rows[0];
  const auto& b = ranking.rows[1];
  const auto& c = ranking.rows[2];
  CHECK(a.name == "A");
  CHECK(a.position == 1);
  CHECK(a.stats.mean == Approx(110));
  CHECK(*a.stats.ci95_half == Approx(4.302653 * 10 / std::sqrt(3.0)).epsilon(1e-5));
  CHECK_FALSE(a.tie);
  CHECK(b.name == "B");
  CHECK(b.tie);
  CHECK(c.name == "C");
  CHECK_FALSE(c.tie);
  CHECK(c.speedup == Approx(1.0));
  CHECK(a.speedup == Approx(10.0));
  CHECK(a.data_wait_ms == Approx(0.25));
  CHECK(a.diagnosis == "compute-bound");

  const auto top = rank_runs(runs, require_metric("images_per_s"), 2);
  CHECK(top.rows.size() == 2);
  CHECK(top.configurations == 3);
  CHECK(top.rows[1].speedup == Approx(95.0 / 11.0));  // still against the slowest of all
}

TEST_CASE("single runs have no interval and tie only on an equal mean", "[report][rank]") {
  const auto ranking =
      rank_runs({run("A", 100), run("B", 99), run("C", 100)}, require_metric("images_per_s"));
  REQUIRE(ranking.rows.size() == 3);
  CHECK(ranking.rows[0].name == "A");  // equal means: by name
  CHECK(ranking.rows[1].name == "C");
  CHECK(ranking.rows[1].tie);
  CHECK_FALSE(ranking.rows[2].tie);
  storage::SweepInfo sweep{1, "s", "exp", "exp.yaml", "", "", "2025-01-01T00:00:00Z", ""};
  const std::string table = format_rank_table(ranking, sweep);
  CHECK_THAT(table, Contains("n=1: a single run has no confidence interval"));
  CHECK_THAT(table, Contains("sweep s (experiment exp, exp.yaml)"));
}

TEST_CASE("lower-is-better metrics rank ascending with speed-up as worst/this", "[report][rank]") {
  const auto ranking =
      rank_runs({run("fast", 200), run("slow", 50)}, require_metric("step_ms_mean"));
  REQUIRE(ranking.rows.size() == 2);
  CHECK(ranking.rows[0].name == "fast");  // 5 ms before 20 ms
  CHECK(ranking.rows[0].stats.mean == Approx(5));
  CHECK(ranking.rows[0].speedup == Approx(4));
  CHECK(ranking.rows[1].speedup == Approx(1));
}

TEST_CASE("an unknown metric is refused with the list of known ones", "[report][rank]") {
  CHECK_THROWS_AS(require_metric("imgs_per_s"), InputError);
  CHECK_THROWS_WITH(require_metric("imgs_per_s"),
                    Contains("unknown metric 'imgs_per_s'") && Contains("images_per_s") &&
                        Contains("step_ms_p90") && Contains("power_mean_w"));
  CHECK(require_metric("step_ms_p99").better == Better::kLower);
  CHECK(require_metric("images_per_s").better == Better::kHigher);
}

TEST_CASE("the rank table shows mean ± CI, ties, the step split and '-' for what is missing",
          "[report][rank]") {
  std::vector<storage::RunRecord> runs = {run("amp", 100), run("amp", 110), run("amp", 120),
                                          run("fp32", 90), run("fp32", 95), run("fp32", 100)};
  runs[0].metrics["gpu_util_mean_pct"] = 97;
  runs[1].metrics["gpu_util_mean_pct"] = 99;
  const auto ranking = rank_runs(runs, require_metric("images_per_s"));
  storage::SweepInfo sweep{1, "night", "exp", "", "", "", "2025-01-01T00:00:00Z", ""};
  const std::string t = format_rank_table(ranking, sweep);
  INFO(t);
  CHECK_THAT(t, Contains("ranked by images_per_s (img/s, higher is better)"));
  CHECK_THAT(t, Contains("110.0 ± 24.8"));
  CHECK_THAT(t,
             Contains("0.25 / 8.89"));  // mean step (10 + 9.09 + 8.33) / 3 = 9.14, minus the wait
  CHECK_THAT(t, Contains("98%"));
  CHECK_THAT(t, Contains("tie"));
  CHECK_THAT(t, Contains("compute-bound"));
}

TEST_CASE("the SQL ranking view and the C++ ranking agree", "[report][rank][store]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  const double values[] = {1000, 1100, 1250, 1175};
  for (int i = 0; i < 4; ++i) store.record(sweep, test::result_doc("a", "h1", i, "ok", values[i]));
  store.record(sweep, test::result_doc("b", "h2", 0, "ok", 900));
  const auto ranking = rank_runs(store.runs(sweep), require_metric("images_per_s"));
  REQUIRE(ranking.rows.size() == 2);
  storage::Statement st(
      store.database(),
      "SELECT images_per_s, images_per_s_stddev, images_per_s_ci95, runs FROM ranking "
      "WHERE config_hash = 'h1'");
  REQUIRE(st.step());
  CHECK(st.column_double(0) == Approx(ranking.rows[0].stats.mean));
  CHECK(st.column_double(1) == Approx(*ranking.rows[0].stats.stddev).epsilon(1e-12));
  CHECK(st.column_double(2) == Approx(*ranking.rows[0].stats.ci95_half).epsilon(1e-12));
  CHECK(st.column_int(3) == 4);
}
