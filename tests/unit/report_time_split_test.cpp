// Where a sweep's time went, as the report shows it: the store adds every invocation up (as the
// sweep_efficiency view does), the section's shares are the ones `orch sweep`'s closing line
// prints, its bar's widths follow the shares, and a sweep with no invocation says so.
#include <catch2/catch.hpp>
#include <regex>

#include "report/html_report.h"
#include "result/run_phases.h"
#include "storage/store.h"
#include "unit/report_html_check.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

using Catch::Contains;

storage::InvocationTime invocation(double wall_s, int slots, double measure_s, double warmup_s) {
  storage::InvocationTime t;
  t.started_at = "2025-01-01T00:00:00Z";
  t.finished_at = "2025-01-01T01:00:00Z";
  t.wall_s = wall_s;
  t.slots = slots;
  t.runs = 3;
  t.phases.measure_s = measure_s;
  t.phases.warmup_s = warmup_s;
  t.phases.startup_s = 6;
  t.unmeasured_s = 4;
  return t;
}

std::string time_section(const std::string& html) {
  const auto start = html.find("<section id=\"time\"");
  REQUIRE(start != std::string::npos);
  return html.substr(start, html.find("</section>", start) - start);
}

}  // namespace

TEST_CASE("the store adds up a sweep's invocations; none recorded is nullopt",
          "[store][efficiency]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto night = store.open_sweep("night", "exp", "");
  const auto other = store.open_sweep("other", "exp", "");
  CHECK_FALSE(store.sweep_time(night).has_value());
  store.record_invocation(night, invocation(100, 1, 40, 30));
  store.record_invocation(night, invocation(50, 2, 30, 10));  // resumed on two GPUs
  store.record_invocation(other, invocation(999, 1, 1, 1));
  const auto t = store.sweep_time(night);
  REQUIRE(t.has_value());
  CHECK(t->invocations == 2);
  CHECK(t->runs == 6);
  CHECK(t->wall_s == Approx(150));
  CHECK(t->slot_s == Approx(200));
  CHECK(t->phases.measure_s == Approx(70));
  CHECK(t->phases.warmup_s == Approx(40));
  CHECK(t->phases.startup_s == Approx(12));
  CHECK(t->unmeasured_s == Approx(8));
}

TEST_CASE("phase shares: measured first, the rest by size, between runs last, summing to 1",
          "[phases]") {
  RunPhases p;
  p.measure_s = 70;
  p.warmup_s = 40;
  p.startup_s = 12;
  const auto shares = phase_shares(p, 8, 200);
  REQUIRE(shares.size() == 9);
  CHECK(shares[0].label == "measured");
  CHECK(shares[0].share == Approx(0.35));
  CHECK(shares[1].label == "warm-up");
  CHECK(shares[2].label == "start-up");
  CHECK(shares[3].label == "failed runs");
  CHECK(shares.back().label == "between runs");
  CHECK(shares.back().seconds == Approx(200 - 70 - 40 - 12 - 8));
  double sum = 0;
  for (const auto& s : shares) sum += s.share;
  CHECK(sum == Approx(1));
  // More accounted than there was (clock skew between processes): never a negative share.
  CHECK(phase_shares(p, 8, 100).back().seconds == 0);
  CHECK(phase_shares(p, 0, 0).empty());
}

TEST_CASE("the report shows where the sweep's time went, its bar as wide as each share",
          "[report][html]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("night", "exp", "");
  store.record(id, test::result_doc("a", "aaaa0001", 0, "ok", 100));
  store.record_invocation(id, invocation(100, 1, 40, 30));
  store.record_invocation(id, invocation(50, 2, 30, 10));
  const std::string html = html_report(store, *store.sweep(id));
  const std::string sec = time_section(html);
  CHECK_THAT(sec, Contains("<b>35%</b> of the sweep's time was measured steps"));
  CHECK_THAT(sec, Contains("over 6 runs in 2 invocations"));
  // 150 s of wall time, 200 s of GPU time: the second invocation had two GPUs.
  CHECK_THAT(sec, Contains("(3 min of GPU time: the wall time times the GPUs)"));
  CHECK_THAT(sec, Contains("<td>warm-up</td>"));
  CHECK_THAT(sec, Contains("<td class=\"num\">20.0%</td>"));  // warm-up 40 of 200
  CHECK_THAT(html, Contains("<a href=\"#time\">time</a>"));

  // The bar: one rectangle per phase with time, widths proportional to the shares (900 wide).
  const auto svgs = test::svg_blocks(sec);
  REQUIRE(svgs.size() == 1);
  CHECK(test::xml_problem(svgs[0]) == "");
  const std::regex rect("<rect x=\"([0-9.]+)\" y=\"0\" width=\"([0-9.]+)\"");
  std::vector<double> widths;
  for (auto m = std::sregex_iterator(svgs[0].begin(), svgs[0].end(), rect);
       m != std::sregex_iterator(); ++m) {
    widths.push_back(std::stod((*m)[2].str()));
  }
  // measured 70, warm-up 40, between runs 200-70-40-12-8 = 70, start-up 12, failed runs 8.
  REQUIRE(widths.size() == 5);
  CHECK(widths[0] == Approx(900 * 0.35).margin(0.01));
  CHECK(widths[1] == Approx(900 * 0.20).margin(0.01));
  double total = 0;
  for (double w : widths) total += w;
  CHECK(total == Approx(900).margin(0.05));
}

TEST_CASE("a sweep with no recorded invocation says its time split is unknown", "[report][html]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("slurm", "exp", "");
  store.record(id, test::result_doc("a", "bbbb0002", 0, "ok", 100));
  const std::string sec = time_section(html_report(store, *store.sweep(id)));
  CHECK_THAT(sec, Contains("its time split is unknown"));
  CHECK(test::svg_blocks(sec).empty());
}

}  // namespace orch
