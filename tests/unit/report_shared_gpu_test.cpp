// A run that started with another process computing on its GPU (metric gpu_other_processes,
// from NVML's process list in the run's environment) measured a shared GPU: `orch rank` and the
// report mark its configuration, with how many of its runs, and say what the mark means.
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

nlohmann::json shared_doc(const std::string& name, const std::string& hash, int repeat, double ips,
                          int others) {
  auto d = test::result_doc(name, hash, repeat, "ok", ips);
  d["metrics"]["gpu_other_processes"] = others;
  d["environment"]["gpu_other_processes"] = nlohmann::json::array();
  for (int i = 0; i < others; ++i)
    d["environment"]["gpu_other_processes"].push_back({{"pid", 4000 + i}, {"name", "python3"}});
  return d;
}

}  // namespace

TEST_CASE("rank and the report mark configurations measured on a shared GPU", "[report]") {
  test::TempDb db;
  storage::Store store{db.path};
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  store.record(id, shared_doc("alone", "aaaa0001", 0, 1000, 0));
  store.record(id, shared_doc("alone", "aaaa0001", 1, 1010, 0));
  store.record(id, shared_doc("crowded", "bbbb0002", 0, 400, 2));
  store.record(id, shared_doc("crowded", "bbbb0002", 1, 420, 1));
  store.record(id, shared_doc("once", "cccc0003", 0, 900, 0));
  store.record(id, shared_doc("once", "cccc0003", 1, 300, 1));

  const Ranking r = rank_runs(store.runs(id), require_metric("images_per_s"));
  REQUIRE(r.rows.size() == 3);
  std::map<std::string, int> shared;
  for (const auto& c : r.rows) shared[c.name] = c.shared_gpu_runs;
  CHECK(shared == std::map<std::string, int>{{"alone", 0}, {"crowded", 2}, {"once", 1}});

  const std::string table = format_rank_table(r, *store.sweep(id));
  INFO(table);
  CHECK(std::regex_search(table, std::regex(R"(\n\s*\d+\s+crowded\s.*  SHARED GPU;)")));
  CHECK(std::regex_search(table, std::regex(R"(\n\s*\d+\s+once\s.*SHARED GPU \(1 of 2 runs\))")));
  CHECK_FALSE(std::regex_search(table, std::regex(R"(\n\s*\d+\s+alone\s.*SHARED)")));
  CHECK_THAT(table, Contains("SHARED GPU: another process was computing on the GPU when the run "
                             "started"));

  const std::string html = html_report(store, *store.sweep(id));
  CHECK(std::regex_search(html,
                          std::regex(R"(<td class="name">once</td>.*SHARED GPU \(1 of 2 runs\))")));
}

TEST_CASE("a sweep on a GPU of its own carries no shared-GPU mark", "[report]") {
  test::TempDb db;
  storage::Store store{db.path};
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  store.record(id, test::result_doc("a", "aaaa0001", 0, "ok", 1000));  // no metric: not known
  store.record(id, shared_doc("b", "bbbb0002", 0, 900, 0));
  const std::string table = format_rank_table(
      rank_runs(store.runs(id), require_metric("images_per_s")), *store.sweep(id));
  CHECK(table.find("SHARED") == std::string::npos);
}
