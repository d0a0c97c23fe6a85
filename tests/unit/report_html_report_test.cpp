// `orch report`'s HTML page from a fixture database built with the Store API: the ranking rows
// and their numbers (the same as `orch rank`), the charts, the before/after table, environment
// warnings, failures, escaping of every stored string, and a page that references nothing
// outside itself.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <regex>
#include <sstream>

#include "analysis/statistics.h"
#include "report/html_escape.h"
#include "report/html_report.h"
#include "report/metric_catalog.h"
#include "report/rank_table.h"
#include "report/ranking.h"
#include "unit/report_html_check.h"
#include "unit/report_html_fixture.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

std::string unescape(std::string s) {
  const std::pair<const char*, const char*> entities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : entities) {
    for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + 1))
      s.replace(p, std::strlen(from), to);
  }
  return s;
}

std::string section(const std::string& html, const std::string& id) {
  const auto start = html.find("<section id=\"" + id + "\"");
  REQUIRE(start != std::string::npos);
  return html.substr(start, html.find("</section>", start) - start);
}

struct Row {
  std::vector<std::string> cells;  // escaped, as in the page
};

std::vector<Row> table_rows(const std::string& html, const std::string& table_class) {
  const auto start = html.find("<table class=\"" + table_class + "\"");
  REQUIRE(start != std::string::npos);
  const std::string table = html.substr(start, html.find("</table>", start) - start);
  std::vector<Row> rows;
  const std::regex tr("<tr>(.*?)</tr>"), td("<td[^>]*>(.*?)</td>");
  for (auto r = std::sregex_iterator(table.begin(), table.end(), tr); r != std::sregex_iterator();
       ++r) {
    const std::string body = (*r)[1].str();
    Row row;
    for (auto c = std::sregex_iterator(body.begin(), body.end(), td); c != std::sregex_iterator();
         ++c) {
      row.cells.push_back((*c)[1].str());
    }
    if (!row.cells.empty()) rows.push_back(row);
  }
  return rows;
}

std::string ci_text(double a, double b) {
  const double mean = (a + b) / 2, sd = std::fabs(a - b) / std::sqrt(2.0);
  return fmt::format("{:.1f} ± {:.1f}", mean, analysis::t_quantile_975(1) * sd / std::sqrt(2.0));
}

}  // namespace

TEST_CASE("the report's ranking rows and numbers are orch rank's", "[report][html]") {
  test::ReportFixture f;
  const std::string html = html_report(f.store, f.sweep());
  const auto rows = table_rows(html, "ranking");
  REQUIRE(rows.size() == 3);
  // Order and names.
  CHECK(unescape(rows[0].cells[1]) == "amp-bf16/channels_last");
  CHECK(unescape(rows[1].cells[1]) == test::kScriptName);
  CHECK(unescape(rows[2].cells[1]) == "fp32/slow");
  // Means with their 95% intervals, computed here by hand from the recorded values.
  CHECK(unescape(rows[0].cells[2]) == ci_text(2000, 2040));
  CHECK(unescape(rows[1].cells[2]) == ci_text(1000, 1010));
  CHECK(rows[2].cells[2] == "500.0");
  CHECK(rows[0].cells[4] == "2");
  CHECK(rows[2].cells[4] == "1");
  // Speed-up over the slowest configuration.
  CHECK(rows[0].cells[5] == fmt::format("{:.2f}x", 2020.0 / 500));
  CHECK(rows[1].cells[5] == fmt::format("{:.2f}x", 1005.0 / 500));
  CHECK(rows[2].cells[5] == "1.00x");
  // The slow configuration waits 100 ms for data in a 512 ms step.
  CHECK(rows[2].cells[6] == "100.00 / 412.00");
  CHECK(rows[0].cells[7] == "8.00");  // peak GiB
  CHECK(rows[1].cells[8] == "50%");   // GPU util
  CHECK(rows[1].cells[9] == "300");   // power W

  // Every cell equals what the console table prints on the same rank's line.
  const std::string console = format_rank_table(
      rank_runs(f.store.runs(f.sweep_id), require_metric("images_per_s")), f.sweep());
  std::istringstream lines(console);
  std::string line;
  std::size_t matched = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, std::regex("^\\s+([0-9]+)  "))) continue;
    const auto& row = rows.at(std::stoi(m[1].str()) - 1);
    for (std::size_t c = 1; c < row.cells.size(); ++c) {
      if (row.cells[c].empty()) continue;
      INFO("rank " << m[1].str() << " column " << c);
      CHECK_THAT(line, Contains(unescape(row.cells[c])));
    }
    ++matched;
  }
  CHECK(matched == 3);
}

TEST_CASE("the report escapes every stored string", "[report][html]") {
  test::ReportFixture f;
  const std::string html = html_report(f.store, f.sweep());
  // No markup from the database survives: not the configuration's script tag, not the error's
  // img tag, not the description's bold.
  std::string lower = html;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  CHECK(lower.find("<script") == std::string::npos);
  CHECK(lower.find("<img") == std::string::npos);
  CHECK(lower.find("<b>bold</b>") == std::string::npos);
  CHECK_THAT(html, Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK_THAT(html, Contains("exp &amp;&quot;&#39;&lt;&gt;"));
  CHECK_THAT(html, Contains("&lt;img src=x onerror=alert(2)&gt; boom"));
  CHECK_THAT(html, Contains("a &lt;b&gt;bold&lt;/b&gt; description"));
  CHECK_THAT(html, Contains("/tmp/exp&lt;1&gt;.yaml"));
  // The raw experiment name never appears, in text or in an attribute.
  CHECK(html.find(test::kOddExperiment) == std::string::npos);
}

TEST_CASE("the report references nothing outside itself", "[report][html]") {
  test::ReportFixture f;
  const std::string html = html_report(f.store, f.sweep());
  const auto refs = test::external_references(html);
  for (const auto& r : refs) INFO(r);
  CHECK(refs.empty());
  for (const char* tag :
       {"<link", "<script", "<iframe", "<object", "<embed", "<img", "<video", "<audio", "<base"}) {
    INFO(tag);
    CHECK(html.find(tag) == std::string::npos);
  }
  CHECK_THAT(html, Contains("<style>"));
  CHECK_THAT(html, Contains("<meta charset=\"utf-8\">"));
  // The checker itself finds what it should.
  CHECK(test::external_references("<img src=\"a.png\">").size() == 1);
  CHECK(test::external_references("<a href=\"https://x\">").size() == 1);
  CHECK(test::external_references("<p style=\"background:url(x.png)\">").size() == 1);
  CHECK(test::external_references("<style>@import 'x.css';</style>").size() == 1);
  CHECK(test::external_references("<a href=\"#ok\"></a><rect fill=\"url(#p)\"/>").empty());
}

TEST_CASE("the report's charts are well-formed SVG with every sample drawn",
          "[report][html][svg]") {
  test::ReportFixture f;
  const std::string html = html_report(f.store, f.sweep());
  const auto svgs = test::svg_blocks(html);
  // Throughput, step split, and three charts for each of the 5 successful runs (the failed
  // run's document has no samples).
  CHECK(svgs.size() == 2 + 3 * 5);
  for (const auto& svg : svgs) {
    INFO(svg.substr(0, 200));
    CHECK(test::xml_problem(svg) == "");
  }
  CHECK(test::xml_problem("<svg><g></svg>") != "");  // the checker catches an unclosed tag
  CHECK(test::xml_problem("<svg><text>a < b</text></svg>") != "");

  // The saw-tooth run: its utilization chart has one point per sample, alternating.
  const std::string telemetry = section(html, "telemetry");
  const auto at = telemetry.find(fmt::format("run {}, ok", f.saw_run));
  REQUIRE(at != std::string::npos);
  const std::regex poly("<polyline class=\"series\" points=\"([^\"]*)\"");
  std::smatch m;
  const std::string rest = telemetry.substr(at);
  REQUIRE(std::regex_search(rest, m, poly));
  const std::string pts = m[1].str();
  std::vector<std::string> ys;
  const std::regex point("[0-9.]+,([0-9.]+)");
  for (auto p = std::sregex_iterator(pts.begin(), pts.end(), point); p != std::sregex_iterator();
       ++p) {
    ys.push_back((*p)[1].str());
  }
  CHECK(ys.size() == test::kSawSamples);
  bool alternates = ys.size() > 2;
  for (std::size_t i = 2; i < ys.size(); ++i)
    alternates = alternates && ys[i] == ys[i - 2] && ys[i] != ys[i - 1];
  CHECK(alternates);
  CHECK_THAT(rest.substr(0, rest.find("</div></div>")),
             Contains("measured steps: 1.00 s to 3.00 s"));
}

TEST_CASE("the report's before/after, environment and failures", "[report][html]") {
  test::ReportFixture f;
  const std::string html = html_report(f.store, f.sweep());

  const std::string ba = section(html, "before-after");
  CHECK_THAT(ba, Contains("before: fp32/slow (1 run)"));
  CHECK_THAT(ba, Contains("after: amp-bf16/channels_last (2 runs)"));
  CHECK_THAT(ba, Contains("slowest"));
  const auto lines = table_rows(html, "compare");
  REQUIRE(lines.size() == 7);
  CHECK(lines[0].cells[0] == "throughput (img/s)");
  CHECK(lines[0].cells[1] == "500.0");
  CHECK(lines[0].cells[2] == "2020.0");
  CHECK(lines[0].cells[3] == fmt::format("{:+.1f}%", 100.0 * (2020.0 - 500) / 500));
  CHECK(lines[5].cells[0] == "data wait (ms)");
  // Why they differ: the verdict, the settings and the environment fields that differ.
  CHECK_THAT(ba, Contains("<p class=\"verdict\">throughput: inconclusive (n=1 vs 2)") &&
                     Contains("<br>B is NOISY") && Contains("(A: before, B: after)"));
  const auto settings = table_rows(html, "settings-diff");
  REQUIRE(settings.size() >= 2);
  CHECK(settings[0].cells[0] == "<code>memory_format</code>");
  CHECK(settings[0].cells[1] == "contiguous");
  CHECK(settings[0].cells[2] == "channels_last");
  bool precision_row = false;
  for (const auto& r : settings) {
    if (r.cells[0] == "<code>precision.plugin</code>" ||
        (r.cells[0].find("precision") != std::string::npos && r.cells[1] == "fp32")) {
      precision_row = r.cells[1] == "fp32" && r.cells[2] == "amp";
    }
  }
  CHECK(precision_row);
  const auto environment = table_rows(html, "environment-diff");
  bool torch_row = false;
  for (const auto& r : environment) {
    if (r.cells[1] == "2.10.0" && r.cells[2] == "2.11.0") torch_row = true;
    CHECK(r.cells[1] != r.cells[2]);  // only fields that differ
  }
  CHECK(torch_row);

  const std::string env = section(html, "environment");
  CHECK_THAT(env, Contains("NVIDIA H200"));
  CHECK_THAT(env, Contains("580.65"));
  CHECK_THAT(env, Contains("2.11.0"));
  CHECK_THAT(env, Contains("gen3 x16 (maximum gen5 x16)"));
  CHECK_THAT(env, Contains("CUDA_LAUNCH_BLOCKING=1: every kernel launch waits"));
  CHECK_THAT(env, Contains("persistence mode is off"));
  CHECK_THAT(env, Contains("below its maximum generation"));
  CHECK_THAT(html, Contains("1 error(s) and 2 warning(s) from the runs' stored environment"));
  CHECK_THAT(env, Contains("cuda:0 (NVIDIA H200): persistence mode is off"));

  const auto failures = table_rows(html, "failures");
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].cells[1] == "broken");
  CHECK(failures[0].cells[3] == "failed");
  CHECK(failures[0].cells[5] == "signal 11");
  CHECK_THAT(failures[0].cells[6], Contains("&lt;img src=x onerror=alert(2)&gt; boom"));
  CHECK_THAT(failures[0].cells[6], Contains("Segmentation fault"));
}

TEST_CASE("a report of a sweep with no successful run still renders", "[report][html]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("bad", "bad", "");
  store.record(id, test::result_doc("only", "eeee0005", 0, "oom"));
  const std::string html = html_report(store, *store.sweep(id));
  CHECK_THAT(html, Contains("No successful run with a throughput"));
  CHECK_THAT(html, Contains("needs two ranked configurations"));
  CHECK(test::svg_blocks(html).empty());
  CHECK(table_rows(html, "failures").size() == 1);
  CHECK(html.find("</html>") != std::string::npos);
}

TEST_CASE("without warnings the environment says so; a CPU run is one", "[report][html]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("clean", "clean", "");
  auto d = test::result_doc("a", "ffff0006", 0, "ok", 100);
  d["environment"]["persistence_mode"] = true;
  store.record(id, d);
  std::string html = html_report(store, *store.sweep(id));
  CHECK_THAT(section(html, "environment"), Contains("None: CUDA_LAUNCH_BLOCKING unset"));
  CHECK(html.find("class=\"finding") == std::string::npos);

  auto cpu = test::result_doc("b", "ffff0007", 0, "ok", 10);
  cpu["environment"] = {{"device", "cpu"}, {"hostname", "laptop"}, {"torch_version", "2.11.0"}};
  cpu["telemetry"] = {{"available", false},
                      {"reason", "the run's device is the CPU"},
                      {"samples", nlohmann::json::array()}};
  store.record(id, cpu);
  html = html_report(store, *store.sweep(id));
  CHECK_THAT(section(html, "environment"), Contains("the run used the CPU"));
  CHECK_THAT(section(html, "telemetry"), Contains("the run&#39;s device is the CPU"));
}
