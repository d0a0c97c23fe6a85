// A configuration whose batch `batch_size: auto` chose: rank and the report name the batch each
// run chose, since the configuration's name says only "auto"; a fixed batch adds nothing.
#include <catch2/catch.hpp>

#include "report/html_report.h"
#include "report/rank_table.h"
#include "report/ranking.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

using Catch::Contains;

nlohmann::json searched(int repeat, std::int64_t chosen, double ips) {
  auto doc = test::result_doc("batch_size=auto", "aaaa0001", repeat, "ok", ips);
  doc["config"]["batch_size"] = "auto";
  doc["batch_size"] = chosen;
  doc["batch_auto"] = true;
  return doc;
}

}  // namespace

TEST_CASE("rank and the report say which batch batch_size: auto chose", "[report][batch]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("night", "exp", "");
  store.record(id, searched(0, 768, 7000));
  store.record(id, searched(1, 768, 7010));
  auto fixed = test::result_doc("batch_size=256", "bbbb0002", 0, "ok", 6000);
  fixed["batch_size"] = 256;
  store.record(id, fixed);

  const Ranking r = rank_runs(store.runs(id), require_metric("images_per_s"));
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0].auto_batches == std::vector<std::int64_t>{768});
  CHECK(configuration_label(r.rows[0]) == "batch_size=auto (chose 768)");
  CHECK(r.rows[1].auto_batches.empty());
  CHECK(configuration_label(r.rows[1]) == "batch_size=256");

  const std::string table = format_sweep_ranking(store, id);
  CHECK_THAT(table, Contains("batch_size=auto (chose 768)"));
  CHECK_THAT(html_report(store, *store.sweep(id)), Contains("batch_size=auto (chose 768)"));

  // Repeats that chose differently (a neighbour took memory in one of them) show both.
  store.record(id, searched(2, 512, 6500));
  const Ranking again = rank_runs(store.runs(id), require_metric("images_per_s"));
  CHECK(configuration_label(again.rows[0]) == "batch_size=auto (chose 512, 768)");
}

}  // namespace orch
