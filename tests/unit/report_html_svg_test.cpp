// The HTML report's building blocks: escaping, shortening, tick steps, number formatting, and
// the SVG charts (balanced markup, every sample drawn, labels escaped).
#include <catch2/catch.hpp>
#include <regex>

#include "report/html_escape.h"
#include "report/svg_axis.h"
#include "report/svg_charts.h"
#include "unit/report_html_check.h"

using namespace orch;
using Catch::Matchers::Contains;

TEST_CASE("html_escape escapes markup, quotes and control characters", "[report][html]") {
  CHECK(html_escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;");
  CHECK(html_escape("a&b \"c\" 'd'") == "a&amp;b &quot;c&quot; &#39;d&#39;");
  CHECK(html_escape("tab\tnew\nline") == "tab\tnew\nline");
  CHECK(html_escape(std::string("nul\0bell\x07", 9)) ==
        "nul\xEF\xBF\xBD"
        "bell\xEF\xBF\xBD");
  CHECK(html_escape("caf\xC3\xA9 \xE2\x80\x94") == "caf\xC3\xA9 \xE2\x80\x94");  // UTF-8 kept
  CHECK(html_escape("bad \xC3(") == "bad \xEF\xBF\xBD(");  // invalid byte replaced
  CHECK(html_escape("&amp;") == "&amp;amp;");              // never trusted
  // Bidirectional and C1 controls are shown as the terminal's messages show them, not applied.
  CHECK(html_escape("a\u202eb\u2066c\u200f\u061c\xc2\x9b"
                    "d") == "a\\u202eb\\u2066c\\u200f\\u061c\\u009bd");
}

TEST_CASE("shorten cuts by characters and marks the cut", "[report][html]") {
  CHECK(shorten("short", 10) == "short");
  CHECK(shorten("exactly10!", 10) == "exactly10!");
  CHECK(shorten("abcdefghijk", 5) == "abcd\xE2\x80\xA6");
  // A multi-byte character is never split.
  CHECK(shorten("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 3) == "\xC3\xA9\xC3\xA9\xE2\x80\xA6");
}

TEST_CASE("nice_ticks covers the range with 1-2-5 steps", "[report][svg]") {
  auto t = nice_ticks(0, 4706.7);
  CHECK(t.step == Approx(1000));
  CHECK(t.lo == 0);
  CHECK(t.hi == Approx(5000));
  CHECK(t.values.size() == 6);
  CHECK(t.decimals == 0);
  auto p = nice_ticks(0, 100, 4);
  CHECK(p.step == Approx(20));  // 25 rounds to 20: 0, 20, ..., 100
  CHECK(p.hi == Approx(100));
  auto small = nice_ticks(0, 0.37);
  CHECK(small.step == Approx(0.1));
  CHECK(small.decimals == 1);
  CHECK(small.hi == Approx(0.4));
  auto flat = nice_ticks(5, 5);  // degenerate: still an axis
  CHECK(flat.hi > flat.lo);
}

TEST_CASE("format_grouped separates thousands", "[report][svg]") {
  CHECK(format_grouped(4706.66, 1) == "4,706.7");
  CHECK(format_grouped(1234567, 0) == "1,234,567");
  CHECK(format_grouped(999.95, 1) == "1,000.0");
  CHECK(format_grouped(-1500, 0) == "-1,500");
  CHECK(format_grouped(-0.001, 1) == "0.0");
  CHECK(svg_num(12.3456) == "12.35");
  CHECK(svg_num(40.0) == "40");
}

TEST_CASE("the bar chart draws one bar and whisker per item, labels escaped", "[report][svg]") {
  std::vector<BarItem> items = {{"<b>fast</b>", 2000, 1800, 2200, "2,000.0 ± 200.0 img/s"},
                                {"slow & \"quoted\"", 500, {}, {}, "500.0 img/s"}};
  const std::string svg = svg_bar_chart(items, "throughput (img/s)");
  CHECK(test::xml_problem(svg) == "");
  CHECK_THAT(svg, !Contains("<b>"));
  CHECK_THAT(svg, Contains("&lt;b&gt;fast&lt;/b&gt;"));
  CHECK_THAT(svg, Contains("slow &amp; &quot;quoted&quot;"));
  CHECK_THAT(svg, Contains("throughput (img/s)"));
  const std::regex bar("<rect [^>]*fill=\"#4a78a8\"");
  CHECK(std::distance(std::sregex_iterator(svg.begin(), svg.end(), bar), std::sregex_iterator()) ==
        2);
  // One whisker: only the first item has an interval.
  const std::regex whisker("class=\"whisker\"");
  CHECK(std::distance(std::sregex_iterator(svg.begin(), svg.end(), whisker),
                      std::sregex_iterator()) == 1);
  // The longer bar is four times the shorter (both start at the axis origin).
  std::vector<double> widths;
  const std::regex width_re(
      "<rect x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"([0-9.]+)\" height=\"[0-9.]+\" fill=\"#4a78a8\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), width_re);
       it != std::sregex_iterator(); ++it) {
    widths.push_back(std::stod((*it)[1].str()));
  }
  REQUIRE(widths.size() == 2);
  CHECK(widths[0] / widths[1] == Approx(4.0).epsilon(0.01));
  // Ticks reach past the largest whisker (2200 -> 2500).
  CHECK_THAT(svg, Contains(">2,500</text>"));
}

TEST_CASE("the stacked bars show both parts, a hatch and a legend", "[report][svg]") {
  std::vector<StackItem> items = {{"a", 10, 30, "10 + 30"}, {"b", 0, 20, "0 + 20"}};
  const std::string svg =
      svg_stacked_bars(items, "data wait (ms)", "compute (ms)", "step (ms)", "t1");
  CHECK(test::xml_problem(svg) == "");
  CHECK_THAT(svg, Contains("<pattern id=\"t1-hatch\""));
  CHECK_THAT(svg, Contains("fill=\"url(#t1-hatch)\""));
  CHECK_THAT(svg, Contains(">data wait (ms)</text>"));
  CHECK_THAT(svg, Contains(">compute (ms)</text>"));
  CHECK(test::external_references(svg).empty());
}

TEST_CASE("the time series draws every sample, breaks at gaps and shades the window",
          "[report][svg]") {
  TimeSeries s;
  s.title = "GPU utilization (%)";
  s.y_max = 100;
  s.window = std::make_pair(1.0, 2.0);
  for (int i = 0; i < 30; ++i) {
    s.t_s.push_back(0.1 * i);
    s.y.push_back(i == 10 ? std::nullopt : std::optional<double>(i % 2 ? 100 : 0));
  }
  const std::string svg = svg_time_series(s);
  CHECK(test::xml_problem(svg) == "");
  // Two polylines (the gap at sample 10 breaks the line) with 10 + 19 points: none dropped.
  const std::regex poly("<polyline class=\"series\" points=\"([^\"]*)\"");
  std::vector<std::size_t> counts;
  std::vector<std::string> ys;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), poly); it != std::sregex_iterator();
       ++it) {
    const std::string pts = (*it)[1].str();
    std::size_t n = 0;
    const std::regex point("[0-9.]+,([0-9.]+)");
    for (auto p = std::sregex_iterator(pts.begin(), pts.end(), point); p != std::sregex_iterator();
         ++p) {
      ++n;
      ys.push_back((*p)[1].str());
    }
    counts.push_back(n);
  }
  REQUIRE(counts.size() == 2);
  CHECK(counts[0] == 10);
  CHECK(counts[1] == 19);
  // No smoothing: consecutive points alternate between exactly two heights.
  REQUIRE(ys.size() > 4);
  CHECK(ys[0] != ys[1]);
  CHECK(ys[0] == ys[2]);
  CHECK(ys[1] == ys[3]);
  CHECK_THAT(svg, Contains("<rect class=\"window\""));
  CHECK_THAT(svg, Contains("measured steps: 1.00 s to 2.00 s"));
  CHECK_THAT(svg, Contains(">100</text>"));  // the fixed top of a percentage axis
  CHECK_THAT(svg, Contains("time since the run started (s)"));
}
