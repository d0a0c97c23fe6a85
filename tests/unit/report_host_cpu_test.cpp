// The host's CPU beside the GPU's numbers: `orch rank`'s and the report's `host CPU all / core`
// column and charts, and `orch compare`'s two lines, only where the host was sampled.
#include <catch2/catch.hpp>
#include <regex>

#include "report/compare.h"
#include "report/html_report.h"
#include "report/metric_catalog.h"
#include "report/rank_table.h"
#include "report/ranking.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

nlohmann::json host_doc(const std::string& name, const std::string& hash, int repeat, double ips,
                        double all_pct, double core_pct) {
  auto d = test::result_doc(name, hash, repeat, "ok", ips);
  d["metrics"]["host_cpu_util_mean_pct"] = all_pct;
  d["metrics"]["host_cpu_busiest_core_mean_pct"] = core_pct;
  d["metrics"]["host_cpu_cores"] = 16;
  d["host_telemetry"] = {
      {"available", true},
      {"source", "procfs"},
      {"interval_ms", 100},
      {"measure_window_s", {0.1, 0.3}},
      {"cores", 16},
      {"samples",
       {{{"t_s", 0.1}, {"cpu_util_pct", all_pct}, {"busiest_core_pct", core_pct}},
        {{"t_s", 0.2}, {"cpu_util_pct", all_pct}, {"busiest_core_pct", core_pct}},
        {{"t_s", 0.3}, {"cpu_util_pct", all_pct}, {"busiest_core_pct", core_pct}}}}};
  return d;
}

}  // namespace

TEST_CASE("rank, the report and compare show the host's CPU beside the GPU's", "[report][host]") {
  test::TempDb db;
  storage::Store store{db.path};
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  store.record(id, host_doc("workers8", "aaaa0001", 0, 1000, 80, 90));
  store.record(id, host_doc("workers8", "aaaa0001", 1, 1010, 60, 100));
  store.record(id, host_doc("workers1", "bbbb0002", 0, 400, 7, 99));

  const Ranking r = rank_runs(store.runs(id), require_metric("images_per_s"));
  const std::string table = format_rank_table(r, *store.sweep(id));
  INFO(table);
  CHECK_THAT(table, Contains("GPU util  power W  host CPU all / core  diagnosis"));
  // The mean of the runs' means, each side.
  CHECK(std::regex_search(table, std::regex(R"(\n\s*1\s+workers8\s.*  70% / 95%  )")));
  CHECK(std::regex_search(table, std::regex(R"(\n\s*2\s+workers1\s.*  7% / 99%  )")));

  const std::string html = html_report(store, *store.sweep(id));
  CHECK_THAT(html, Contains("<th class=\"num\">host CPU all / core</th>"));
  CHECK(std::regex_search(
      html, std::regex(R"(<td class="name">workers1</td>.*<td class="num">7% / 99%</td>)")));
  CHECK_THAT(html, Contains("host CPU, all cores (%)"));
  CHECK_THAT(html, Contains("busiest host core (%)"));

  const auto runs = store.runs(id);
  const auto a = select_runs(store, runs, "workers8");
  const auto b = select_runs(store, runs, "workers1");
  bool all = false, core = false;
  for (const auto& l : comparison_lines(a, b)) {
    if (l.label == "mean host CPU, all cores (%)") {
      all = true;
      CHECK(l.a == 70.0);
      CHECK(l.b == 7.0);
    }
    if (l.label == "busiest host core (%)") {
      core = true;
      CHECK(l.b == 99.0);
    }
  }
  CHECK(all);
  CHECK(core);
}

TEST_CASE("without host samples, rank, the report and compare read as before", "[report][host]") {
  test::TempDb db;
  storage::Store store{db.path};
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  store.record(id, test::result_doc("a", "aaaa0001", 0, "ok", 1000));
  store.record(id, test::result_doc("b", "bbbb0002", 0, "ok", 900));
  const std::string table = format_rank_table(
      rank_runs(store.runs(id), require_metric("images_per_s")), *store.sweep(id));
  CHECK(table.find("host CPU") == std::string::npos);
  const std::string html = html_report(store, *store.sweep(id));
  CHECK(html.find("host CPU all / core") == std::string::npos);
  CHECK(html.find("busiest host core") == std::string::npos);
  const auto runs = store.runs(id);
  for (const auto& l :
       comparison_lines(select_runs(store, runs, "a"), select_runs(store, runs, "b")))
    CHECK(l.label.find("host") == std::string::npos);
}
