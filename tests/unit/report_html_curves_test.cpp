// The report's two curves: the probe curve of a `batch_size: auto` search (section
// batch-search) and one configuration's throughput across sweeps (section trend), from a
// database of three nights built with the Store API.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <regex>

#include "analysis/statistics.h"
#include "report/html_report.h"
#include "unit/report_html_check.h"
#include "unit/store_test_support.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

std::string section_or_empty(const std::string& html, const std::string& id) {
  const auto start = html.find("<section id=\"" + id + "\"");
  if (start == std::string::npos) return {};
  return html.substr(start, html.find("</section>", start) - start);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Three nights. "steady" (hash aaaa) runs every night: twice, once, twice. "searched" (hash
// bbbb) runs on the second night only, its batch found by the fastest-batch search.
struct Nights {
  test::TempDb db;
  storage::Store store{db.path};
  std::int64_t night1 = store.open_sweep("night-1", "exp", "");
  std::int64_t night2 = store.open_sweep("night-2", "exp", "");
  std::int64_t night3 = store.open_sweep("night-3", "exp", "");

  Nights() {
    store.record(night1, test::result_doc("steady", "aaaa", 0, "ok", 1000));
    store.record(night1, test::result_doc("steady", "aaaa", 1, "ok", 1010));
    store.record(night2, test::result_doc("steady", "aaaa", 0, "ok", 900));
    auto searched = test::result_doc("searched", "bbbb", 0, "ok", 5600);
    searched["config"]["batch_size"] = "auto";
    searched["batch_size"] = 256;
    searched["batch_auto"] = true;
    searched["batch_search"] = {
        {"mode", "fastest"},
        {"headroom", 0.9},
        {"chosen", 256},
        {"search_s", 38.25},
        {"probes",
         {{{"batch", 64},
           {"fits", true},
           {"outcome", "ok"},
           {"images_per_s", 3000.0},
           {"peak_memory_bytes", 10737418240}},
          {{"batch", 128}, {"fits", true}, {"outcome", "ok"}, {"images_per_s", 4500.0}},
          {{"batch", 256}, {"fits", true}, {"outcome", "ok"}, {"images_per_s", 5682.0}},
          {{"batch", 512}, {"fits", false}, {"outcome", "oom"}},
          {{"batch", 384}, {"fits", true}, {"outcome", "ok"}, {"images_per_s", 5400.0}}}}};
    store.record(night2, searched);
    store.record(night3, test::result_doc("steady", "aaaa", 0, "ok", 950));
    store.record(night3, test::result_doc("steady", "aaaa", 1, "ok", 960));
  }
  std::string report(std::int64_t sweep) { return html_report(store, *store.sweep(sweep)); }
};

}  // namespace

TEST_CASE("the report draws the probe curve of a searched batch", "[report][html][batch]") {
  Nights n;
  const std::string html = n.report(n.night2);
  const std::string s = section_or_empty(html, "batch-search");
  REQUIRE_FALSE(s.empty());
  CHECK_THAT(html, Contains("<a href=\"#batch-search\">"));
  CHECK_THAT(s, Contains("Chosen: <strong>256</strong>"));
  CHECK_THAT(s, Contains("The search took 38.2 s"));
  CHECK_THAT(s, Contains("Memory headroom: 90%"));
  const auto svgs = test::svg_blocks(s);
  REQUIRE(svgs.size() == 1);
  CHECK(test::xml_problem(svgs[0]) == "");
  // Four probes that fitted are points on the line, the one out of memory a cross, the chosen
  // batch ringed once.
  CHECK(count(svgs[0], "<circle class=\"point\"") == 4);
  CHECK(count(svgs[0], "class=\"cross\"") == 1);
  CHECK(count(svgs[0], "class=\"highlight\"") == 1);
  CHECK_THAT(svgs[0], Contains("batch 512: out of memory"));
  CHECK_THAT(svgs[0], Contains("batch 256: fits, 5,682.0 img/s"));
  CHECK_THAT(svgs[0], Contains("batch 64: fits, 3,000.0 img/s, peak 10.00 GiB"));
  // The line joins the fitted probes in batch order: 64, 128, 256, 384.
  std::smatch m;
  REQUIRE(
      std::regex_search(svgs[0], m, std::regex("<polyline class=\"series\" points=\"([^\"]*)\"")));
  const std::string pts = m[1].str();
  std::vector<double> xs;
  const std::regex point("([0-9.]+),[0-9.]+");
  for (auto p = std::sregex_iterator(pts.begin(), pts.end(), point); p != std::sregex_iterator();
       ++p)
    xs.push_back(std::stod((*p)[1].str()));
  REQUIRE(xs.size() == 4);
  CHECK(std::is_sorted(xs.begin(), xs.end()));
  // The table lists the probes in the order they ran, the chosen one marked.
  const auto rows = count(s, "<tr");
  CHECK(rows == 1 + 5);
  CHECK_THAT(s, Contains("<tr class=\"chosen\"><td>3</td><td>256</td>"));
  CHECK_THAT(s, Contains("<td>4</td><td>512</td><td>-</td><td>-</td><td>out of memory</td>"));

  // A sweep without a search has no such section, and no link to it.
  const std::string first = n.report(n.night1);
  CHECK(section_or_empty(first, "batch-search").empty());
  CHECK_THAT(first, !Contains("href=\"#batch-search\""));
}

TEST_CASE("the report follows a configuration across sweeps, up to the one reported",
          "[report][html][trend]") {
  Nights n;
  CHECK(section_or_empty(n.report(n.night1), "trend").empty());  // nothing earlier

  const std::string second = section_or_empty(n.report(n.night2), "trend");
  REQUIRE_FALSE(second.empty());
  CHECK_THAT(second, Contains("<h3>steady</h3>"));
  CHECK_THAT(second, !Contains("<h3>searched</h3>"));  // measured by one sweep only
  auto svgs = test::svg_blocks(second);
  REQUIRE(svgs.size() == 1);
  CHECK(count(svgs[0], "<circle class=\"point\"") == 2);  // night-3 came later: not shown
  CHECK_THAT(svgs[0], !Contains("night-3"));

  const std::string third_html = n.report(n.night3);
  CHECK_THAT(third_html, Contains("<a href=\"#trend\">"));
  const std::string third = section_or_empty(third_html, "trend");
  svgs = test::svg_blocks(third);
  REQUIRE(svgs.size() == 1);
  CHECK(test::xml_problem(svgs[0]) == "");
  CHECK(count(svgs[0], "<circle class=\"point\"") == 3);
  // Whiskers where a night repeated the configuration (nights 1 and 3), none for night 2.
  CHECK(count(svgs[0], "class=\"whisker\"") == 2);
  // In creation order, this sweep ringed.
  const auto p1 = svgs[0].find(">night-1<"), p2 = svgs[0].find(">night-2<"),
             p3 = svgs[0].find(">night-3<");
  REQUIRE(p1 != std::string::npos);
  REQUIRE(p2 != std::string::npos);
  REQUIRE(p3 != std::string::npos);
  CHECK(p1 < p2);
  CHECK(p2 < p3);
  CHECK(count(svgs[0], "class=\"highlight\"") == 1);
  const double half = analysis::t_quantile_975(1) * 10 / std::sqrt(2.0) / std::sqrt(2.0);
  CHECK_THAT(svgs[0], Contains(fmt::format("night-1 (")));
  CHECK_THAT(svgs[0], Contains(fmt::format("1,005.0 img/s ± {:.1f}, 2 run(s)", half)));
  CHECK_THAT(svgs[0], Contains("900.0 img/s, 1 run(s)"));
}
