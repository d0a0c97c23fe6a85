// Diverged runs (their loss became NaN or infinite) through the store and the read commands:
// stored as the configuration's failure, left out of the SQL ranking and of `orch rank` by
// default but listed with their reason, ranked and marked when asked, and marked in the HTML
// report.
#include <catch2/catch.hpp>
#include <regex>

#include "report/html_report.h"
#include "report/metric_catalog.h"
#include "report/rank_table.h"
#include "report/ranking.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

constexpr const char* kReason =
    "the loss became nan at measured step 3 of 12 (step 2: 4.2e+28); lower the learning rate or "
    "use a more stable precision";

// What the runner writes for a diverged run: the measured metrics and steps are kept.
nlohmann::json diverged_doc(const std::string& name, const std::string& hash, int repeat,
                            double ips) {
  auto d = test::result_doc(name, hash, repeat, "ok", ips);
  d["status"] = "diverged";
  d["error"] = kReason;
  d["steps"][1]["loss"] = nullptr;  // NaN, as JSON writes it
  return d;
}

struct Sweep {
  test::TempDb db;
  storage::Store store{db.path};
  std::int64_t id = store.open_sweep("night", "exp", "exp.yaml");
  Sweep() {
    store.record(id, test::result_doc("good", "aaaa0001", 0, "ok", 1000));
    store.record(id, test::result_doc("good", "aaaa0001", 1, "ok", 1010));
    // Faster than every ok run: ranked, it would lead.
    store.record(id, diverged_doc("lr-huge", "bbbb0002", 0, 5000));
    // A configuration with one ok and one diverged repeat.
    store.record(id, test::result_doc("mixed", "cccc0003", 0, "ok", 800));
    store.record(id, diverged_doc("mixed", "cccc0003", 1, 900));
  }
  storage::SweepInfo info() const { return *store.sweep(id); }
  // The first column of the first row of `sql`.
  std::int64_t scalar(const std::string& sql) {
    storage::Statement st(store.database(), sql);
    REQUIRE(st.step());
    return st.column_int(0);
  }
};

}  // namespace

TEST_CASE("a diverged run is stored as the configuration's failure and not in the ranking view",
          "[report][store]") {
  Sweep s;
  CHECK(s.scalar("SELECT COUNT(*) FROM runs WHERE status = 'diverged' AND "
                 "failure_class = 'configuration'") == 2);
  CHECK(s.scalar("SELECT COUNT(*) FROM runs WHERE status = 'ok' AND failure_class IS NULL") == 3);
  CHECK(s.scalar("SELECT COUNT(*) FROM ranking WHERE config_hash = 'bbbb0002'") == 0);
  CHECK(s.scalar("SELECT diverged FROM sweep_status") == 2);
  CHECK(s.scalar("SELECT COUNT(*) FROM failures WHERE status = 'diverged'") == 2);
  // Its measured throughput is kept (the document's metrics), only not ranked.
  const auto runs = s.store.runs(s.id, "diverged");
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].error == kReason);
  CHECK(runs[0].metric("images_per_s").has_value());
}

TEST_CASE("orch rank leaves diverged runs out by default and lists them with the reason",
          "[report]") {
  Sweep s;
  const Ranking r = rank_runs(s.store.runs(s.id), require_metric("images_per_s"));
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0].name == "good");
  CHECK(r.rows[1].name == "mixed");
  CHECK(r.rows[1].stats.n == 1);  // its diverged repeat is not averaged in
  CHECK(r.rows[1].diverged_runs == 0);
  CHECK(r.ok_runs == 3);
  CHECK(r.unranked == 1);  // lr-huge: nothing but a diverged run
  REQUIRE(r.diverged.size() == 2);
  CHECK(r.diverged[0].name == "lr-huge");
  CHECK(r.diverged[1].name == "mixed");
  CHECK(r.diverged[1].repeat == 1);
  CHECK_FALSE(r.diverged[0].ranked);
  CHECK(r.diverged_ranked == 0);

  const std::string table = format_rank_table(r, s.info());
  INFO(table);
  CHECK_THAT(table, Contains("2 diverged run(s) (loss NaN or infinite) are not ranked; "
                             "`orch rank --include-diverged` ranks them:"));
  CHECK_THAT(table, Contains("  lr-huge (repeat 0): the loss became nan at measured step 3"));
  CHECK_THAT(table, Contains("  mixed (repeat 1): the loss became nan"));
  CHECK_THAT(table, Contains("2 configurations from 3 successful runs\n"));
  // No row of the table is lr-huge's, and nothing is marked.
  CHECK_FALSE(std::regex_search(table, std::regex(R"(\n\s*\d+\s+lr-huge\s)")));
  CHECK(table.find("DIVERGED") == std::string::npos);
}

TEST_CASE("orch rank --include-diverged ranks them, marked", "[report]") {
  Sweep s;
  const Ranking r =
      rank_runs(s.store.runs(s.id), require_metric("images_per_s"), 0, Diverged::include);
  REQUIRE(r.rows.size() == 3);
  CHECK(r.rows[0].name == "lr-huge");
  CHECK(r.rows[0].diverged_runs == 1);
  CHECK(r.rows[2].name == "mixed");
  CHECK(r.rows[2].stats.n == 2);
  CHECK(r.rows[2].diverged_runs == 1);
  CHECK(r.rows[1].diverged_runs == 0);
  CHECK(r.diverged_ranked == 2);
  CHECK(r.ok_runs == 3);
  CHECK(r.unranked == 0);

  const std::string table = format_rank_table(r, s.info());
  INFO(table);
  CHECK(std::regex_search(table, std::regex(R"(\n\s*1\s+lr-huge\s.*  DIVERGED)")));
  CHECK(std::regex_search(table, std::regex(R"(\n\s*3\s+mixed\s.*DIVERGED \(1 of 2 runs\))")));
  CHECK_FALSE(std::regex_search(table, std::regex(R"(\n\s*2\s+good\s.*DIVERGED)")));
  CHECK_THAT(table, Contains("3 configurations from 3 successful runs and 2 diverged\n"));
  CHECK_THAT(table, Contains("2 diverged run(s) (loss NaN or infinite), 2 of them ranked"));
  CHECK_THAT(table, Contains("  lr-huge (repeat 0): the loss became nan"));
}

TEST_CASE("a sweep whose only runs diverged says so instead of an empty ranking", "[report]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  store.record(id, diverged_doc("lr-huge", "bbbb0002", 0, 5000));
  const std::string table = format_sweep_ranking(store, id);
  INFO(table);
  CHECK_THAT(table, Contains("no successful runs with images_per_s"));
  CHECK_THAT(table, Contains("1 diverged run(s) (loss NaN or infinite) are not ranked"));
  CHECK_THAT(table, Contains("lr-huge (repeat 0): the loss became nan"));
}

TEST_CASE("the HTML report marks diverged runs, with the reason, outside the ranking",
          "[report][html]") {
  Sweep s;
  const std::string html = html_report(s.store, s.info());
  const auto ranking_start = html.find("<section id=\"ranking\"");
  const std::string ranking =
      html.substr(ranking_start, html.find("</section>", ranking_start) - ranking_start);
  const std::string table = ranking.substr(0, ranking.find("</table>"));
  CHECK(table.find("lr-huge") == std::string::npos);
  CHECK_THAT(ranking, Contains("<span class=\"diverged\">2 diverged run(s)</span>"));
  CHECK_THAT(ranking, Contains("<li><b>lr-huge</b> (repeat 0): the loss became nan at measured "
                               "step 3 of 12"));
  const auto failures_start = html.find("<section id=\"failures\"");
  const std::string failures = html.substr(failures_start);
  CHECK(std::regex_search(
      failures, std::regex(R"(<td class="name">lr-huge</td>.*<span class="diverged">diverged)")));
}
