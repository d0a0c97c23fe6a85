// A halving sweep as rank and the report read it: the ranking is the last rung's full
// measurements only, the pruned configurations are listed below it with the rung that dropped
// them and their shorter measurement, and a sweep that stopped early says which rung it reached.
#include <catch2/catch.hpp>

#include "report/halving_status.h"
#include "report/html_report.h"
#include "report/rank_table.h"
#include "storage/store.h"
#include "storage/sweep_plans.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

using Catch::Contains;

// A configuration's hash, hex as a real one: "a" -> "aaaaaaaa".
std::string hash_of(const std::string& config) { return std::string(8, config[0]); }

nlohmann::json measured(const std::string& config, int rung, double ips, int steps) {
  auto doc = test::result_doc(
      config, rung < 0 ? hash_of(config) : "r" + std::to_string(rung) + config, 0, "ok", ips);
  doc["config"]["steps"] = {{"warmup", 1}, {"measure", steps}};
  if (rung >= 0)
    doc["config"]["search"] = {
        {"method", "halving"}, {"rung", rung}, {"configuration", hash_of(config)}};
  return doc;
}

// Four configurations a..d, eta 2: rung 0 (5 steps) keeps 2, rung 1 is the full measurement
// (20 steps).
struct HalvingSweep {
  test::TempDb db;
  storage::Store store{db.path};
  std::int64_t sweep = store.open_sweep("night", "exp", "");
  HalvingSweep() {
    storage::SweepPlan plan;
    for (const char* c : {"a", "b", "c", "d"}) {
      plan.configs.push_back(storage::PlannedConfig{
          hash_of(c), c, 1, {{"warmup", 1}, {"measure", 20}}, {{std::string("r0") + c, 5, 1}}});
    }
    plan.search = {{"method", "halving"},
                   {"eta", 2},
                   {"rungs", 2},
                   {"rung_repeat", 1},
                   {"schedule",
                    {{{"entrants", 4}, {"keep", 2}, {"repeats", 1}},
                     {{"entrants", 2}, {"keep", 2}, {"repeats", 1}}}}};
    storage::record_plan(store.database(), sweep, plan);
    const double ips[] = {400, 300, 200, 100};
    const char* names[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; ++i) store.record(sweep, measured(names[i], 0, ips[i], 5));
    store.mark_pruned(sweep, "r0c", 0);
    store.mark_pruned(sweep, "r0d", 0);
  }
};

TEST_CASE("halving report: stopped after rung 0, rank says where it stands", "[report][halving]") {
  HalvingSweep h;
  const std::string text = format_sweep_ranking(h.store, h.sweep);
  INFO(text);
  CHECK_THAT(text, Contains("no successful runs"));  // nothing of rung 0 is ranked
  CHECK_THAT(text, Contains("rung 0: 4 configurations measured over 5 steps x 1 repeat, 2 pruned"));
  CHECK_THAT(text, Contains("rung 1 (full): not reached (2 configurations planned)"));
  CHECK_THAT(text, Contains("the sweep has reached rung 0 so far; the ranking comes from rung 1"));
  CHECK_THAT(text, Contains("c  pruned at rung 0: 200.0 img/s over 5 steps"));
  CHECK(text.find("c  pruned") < text.find("d  pruned"));  // fastest first
}

TEST_CASE("halving report: the last rung ranked alone, the pruned below, in the HTML too",
          "[report][halving]") {
  HalvingSweep h;
  h.store.record(h.sweep, measured("a", -1, 350, 20));
  h.store.record(h.sweep, measured("b", -1, 390, 20));
  const std::string text = format_sweep_ranking(h.store, h.sweep);
  INFO(text);
  // b's full measurement ranks it first, whatever rung 0 said; a's 400 of rung 0 is not mixed in.
  CHECK_THAT(text, Contains("2 configurations from 2 successful runs"));
  CHECK(text.find("  1  b") != std::string::npos);
  CHECK_THAT(text, Contains("350.0"));
  CHECK_THAT(text, Contains("rung 1 (full): 2 configurations measured over 20 steps x 1 repeat: "
                            "ranked above"));
  CHECK(text.find("reached rung") == std::string::npos);
  CHECK(text.find("pruned at rung 0") > text.find("successful runs"));

  const std::string html = html_report(h.store, *h.store.sweep(h.sweep));
  CHECK_THAT(html, Contains("<h2>Successive halving</h2>"));
  CHECK_THAT(html, Contains("<td class=\"name\">d</td><td class=\"num\">0</td><td "
                            "class=\"num\">100.0</td><td class=\"num\">5</td>"));
}

}  // namespace
}  // namespace orch
