// The Store's typed reads that the report, the MLflow export, the plan estimate and the sweep
// use instead of the raw database: a run's samples, steps and batch probes; a sweep's
// environments and failures; a configuration's history across sweeps; successful runs'
// durations; and the plan revisions through the Store.
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "storage/sweep_plans.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using orch::test::result_doc;
using orch::test::TempDb;

namespace {

SweepPlan plan_of(const std::string& hash, int repeats) {
  SweepPlan p;
  p.experiment_file = "exp.yaml";
  p.configs = {{hash, "fp32", repeats, {{"measure", 50}}}};
  return p;
}

nlohmann::json host_sampled_doc() {
  auto doc = result_doc("fp32", "h1", 0);
  doc["host_telemetry"] = {{"available", true},
                           {"measure_window_s", {0.5, 2.5}},
                           {"samples",
                            {{{"t_s", 0.0}, {"cpu_util_pct", nullptr}, {"load1", 3.5}},
                             {{"t_s", 1.0},
                              {"cpu_util_pct", 40.0},
                              {"busiest_core_pct", 99.0},
                              {"busiest_core", 7},
                              {"mem_available_bytes", 4096}}}}};
  // A GPU sample without a time is kept in the table but has no place on a time axis.
  doc["telemetry"]["samples"].push_back({{"gpu_util_pct", 50}});
  return doc;
}

}  // namespace

TEST_CASE("Store plan methods: revisions recorded, read and their warnings replaced",
          "[store][revisions]") {
  TempDb db;
  Store store(db.path);
  const auto id = store.open_sweep("night", "exp", "exp.yaml");
  CHECK_FALSE(store.latest_plan(id));
  CHECK(store.plan_revisions(id) == 0);
  // No revision: nothing to keep the warnings with, and nothing is written.
  CHECK(store.set_latest_plan_warnings(id, {"persistence mode is off"}) == 0);
  CHECK(store.plan_revisions(id) == 0);

  CHECK(store.record_plan(id, plan_of("h1", 3)) == 1);
  CHECK(store.record_plan(id, plan_of("h2", 5)) == 2);
  CHECK(store.plan_revisions(id) == 2);
  const auto latest = store.latest_plan(id);
  REQUIRE(latest);
  CHECK(latest->revision == 2);
  REQUIRE(latest->configs.size() == 1);
  CHECK(latest->configs[0].hash == "h2");
  CHECK(latest->configs[0].repeats == 5);
  const auto first = store.plan_revision(id, 1);
  REQUIRE(first);
  CHECK(first->configs[0].hash == "h1");
  CHECK_FALSE(store.plan_revision(id, 0));
  CHECK_FALSE(store.plan_revision(id, 3));

  // Only the latest revision's warnings change.
  CHECK(store.set_latest_plan_warnings(id, {"persistence mode is off"}) == 2);
  CHECK(store.latest_plan(id)->warnings == std::vector<std::string>{"persistence mode is off"});
  CHECK(store.plan_revision(id, 1)->warnings.empty());
}

TEST_CASE("Store::run_telemetry: timed GPU and host samples with their windows",
          "[store][samples]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("night", "exp", "exp.yaml");
  const auto ok = store.record(sweep, host_sampled_doc());
  const auto failed = store.record(sweep, result_doc("amp", "h2", 0, "failed"));

  const RunTelemetry t = store.run_telemetry(ok);
  REQUIRE(t.window);
  CHECK(t.window->first == 0.0);
  CHECK(t.window->second == 10.0);
  CHECK(t.reason.empty());
  CHECK(t.t_s == std::vector<double>{1.0, 2.0});  // the untimed sample is left out
  CHECK(t.gpu_util_pct == std::vector<std::optional<double>>{96.0, 98.0});
  CHECK(t.power_w == std::vector<std::optional<double>>{590.5, 610.0});
  CHECK(t.memory_used_bytes == std::vector<std::optional<double>>{1000.0, std::nullopt});
  REQUIRE(t.host_window);
  CHECK(t.host_window->first == 0.5);
  CHECK(t.host_window->second == 2.5);
  CHECK(t.host_t_s == std::vector<double>{0.0, 1.0});
  CHECK(t.host_cpu_pct == std::vector<std::optional<double>>{std::nullopt, 40.0});
  CHECK(t.host_core_pct == std::vector<std::optional<double>>{std::nullopt, 99.0});

  const RunTelemetry none = store.run_telemetry(failed);
  CHECK_FALSE(none.window);
  CHECK_FALSE(none.host_window);
  CHECK(none.t_s.empty());
  CHECK(none.host_t_s.empty());
  CHECK(store.run_telemetry(ok + failed + 100).t_s.empty());  // no such run
}

TEST_CASE("Store::run_steps and sample_series: every row, the measured columns only",
          "[store][samples]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("night", "exp", "exp.yaml");
  auto doc = host_sampled_doc();
  doc["steps"].push_back({{"step", 2}, {"step_ms", 12.0}});  // no wait, no loss
  const auto id = store.record(sweep, doc);

  const auto steps = store.run_steps(id);
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].step == 0);
  CHECK(steps[0].step_ms == 10.0);
  CHECK(steps[0].data_wait_ms == 0.5);
  CHECK(steps[0].loss == 6.9);
  CHECK(steps[2].step == 2);
  CHECK(steps[2].step_ms == 12.0);
  CHECK_FALSE(steps[2].data_wait_ms);
  CHECK_FALSE(steps[2].loss);

  const SampleSeries gpu = store.sample_series(id, SampleTable::gpu);
  CHECK(gpu.columns == std::vector<std::string>{"gpu_util_pct", "mem_util_pct", "power_w",
                                                "sm_clock_mhz", "mem_clock_mhz", "temperature_c",
                                                "memory_used_bytes", "pcie_rx_bytes_per_s",
                                                "pcie_tx_bytes_per_s"});
  REQUIRE(gpu.rows.size() == 3);  // the untimed sample too
  CHECK(gpu.rows[0].seq == 0);
  CHECK(gpu.rows[0].t_s == 1.0);
  REQUIRE(gpu.rows[0].values.size() == gpu.columns.size());
  CHECK(gpu.rows[0].values[0] == 96.0);
  CHECK(gpu.rows[0].values[6] == 1000.0);
  CHECK_FALSE(gpu.rows[0].values[7]);  // pcie_rx not supported
  CHECK(gpu.rows[2].seq == 2);
  CHECK_FALSE(gpu.rows[2].t_s);
  CHECK(gpu.rows[2].values[0] == 50.0);

  const SampleSeries host = store.sample_series(id, SampleTable::host);
  CHECK(host.columns == std::vector<std::string>{"cpu_util_pct", "busiest_core_pct", "load1",
                                                 "mem_available_bytes"});
  REQUIRE(host.rows.size() == 2);
  CHECK(host.rows[0].values ==
        std::vector<std::optional<double>>{std::nullopt, std::nullopt, 3.5, std::nullopt});
  CHECK(host.rows[1].values ==
        std::vector<std::optional<double>>{40.0, 99.0, std::nullopt, 4096.0});
}

TEST_CASE("Store::batch_search: the search's summary and its probes in order", "[store]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("night", "exp", "exp.yaml");
  auto doc = result_doc("auto", "h1", 0);
  doc["batch_auto"] = true;
  doc["batch_search"] = {{"mode", "largest"},
                         {"headroom", 0.9},
                         {"chosen", 128},
                         {"search_s", 12.5},
                         {"probes",
                          {{{"batch", 128},
                            {"outcome", "ok"},
                            {"images_per_s", 4800.0},
                            {"peak_memory_bytes", 17000000000}},
                           {{"batch", 256}, {"outcome", "oom"}}}}};
  const auto searched = store.record(sweep, doc);
  const auto fixed = store.record(sweep, result_doc("fixed", "h2", 0));

  const BatchSearchRecord s = store.batch_search(searched);
  CHECK(s.mode == "largest");
  CHECK(s.chosen == 128);
  CHECK(s.search_s == 12.5);
  CHECK(s.headroom == 0.9);
  REQUIRE(s.probes.size() == 2);
  CHECK(s.probes[0].batch == 128);
  CHECK(s.probes[0].images_per_s == 4800.0);
  CHECK(s.probes[0].peak_memory_bytes == 17000000000);
  CHECK(s.probes[0].outcome == "ok");
  CHECK(s.probes[1].batch == 256);
  CHECK_FALSE(s.probes[1].images_per_s);
  CHECK(s.probes[1].outcome == "oom");

  const BatchSearchRecord none = store.batch_search(fixed);
  CHECK(none.mode.empty());
  CHECK_FALSE(none.chosen);
  CHECK(none.probes.empty());
}

TEST_CASE("Store::run_environments and failures: of one sweep only", "[store]") {
  TempDb db;
  Store store(db.path);
  const auto night = store.open_sweep("night", "exp", "exp.yaml");
  const auto other = store.open_sweep("other", "exp", "exp.yaml");
  store.record(night, result_doc("fp32", "h1", 0));
  auto failed = result_doc("amp", "h2", 1, "failed");
  failed["environment"]["hostname"] = "node2";
  const auto failed_id = store.record(night, failed);
  store.record(other, result_doc("amp", "h2", 0, "failed"));

  const auto envs = store.run_environments(night);
  REQUIRE(envs.size() == 2);  // by run id
  CHECK(envs[0].value("hostname", "") == "node1");
  CHECK(envs[1].value("hostname", "") == "node2");
  CHECK(store.run_environments(night + other + 100).empty());

  const auto failures = store.failures("night");
  REQUIRE(failures.size() == 1);  // the ok run is no failure, the other sweep's is not this one's
  CHECK(failures[0].run_id == failed_id);
  CHECK(failures[0].name == "amp");
  CHECK(failures[0].repeat == 1);
  CHECK(failures[0].status == "failed");
  CHECK(failures[0].attempts == 1);
  CHECK(failures[0].error == "boom");
  CHECK_FALSE(failures[0].exit_code);
  CHECK(failures[0].term_signal == 11);
  CHECK(failures[0].stderr_tail == "Segmentation fault");
}

TEST_CASE("Store::config_history: ok runs of the configuration up to the sweep", "[store]") {
  TempDb db;
  Store store(db.path);
  const auto a = store.open_sweep("a", "exp", "exp.yaml");
  const auto b = store.open_sweep("b", "exp", "exp.yaml");
  const auto c = store.open_sweep("c", "exp", "exp.yaml");
  store.record(a, result_doc("fp32", "h1", 1, "ok", 1100));
  store.record(a, result_doc("fp32", "h1", 0, "ok", 1000));
  store.record(a, result_doc("amp", "h2", 0, "ok", 5000));  // another configuration
  store.record(b, result_doc("fp32", "h1", 0, "ok", 1200));
  store.record(b, result_doc("fp32", "h1", 1, "failed"));
  store.record(c, result_doc("fp32", "h1", 0, "ok", 1300));  // a later sweep

  const auto info = store.sweep(b);
  REQUIRE(info);
  const auto runs = store.config_history("h1", *info);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].sweep_id == a);
  CHECK(runs[0].sweep == "a");
  CHECK(runs[0].images_per_s == 1000);  // by repeat within the sweep
  CHECK(runs[1].images_per_s == 1100);
  CHECK(runs[2].sweep_id == b);
  CHECK(runs[2].images_per_s == 1200);
  CHECK(runs[2].sweep_created_at == info->created_at);
  CHECK(runs[2].driver_version == "580.65");
  CHECK(runs[2].cudnn_version.empty());  // not recorded
  CHECK(store.config_history("h3", *info).empty());
}

TEST_CASE("Store::successful_run_durations: ok runs with a positive duration", "[store]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("night", "exp", "exp.yaml");
  auto slow = result_doc("fp32", "h1", 0);
  slow["duration_s"] = 90.5;
  store.record(sweep, slow);
  store.record(sweep, result_doc("amp", "h2", 0, "failed"));
  auto instant = result_doc("amp", "h3", 0);
  instant["duration_s"] = 0.0;
  store.record(sweep, instant);

  const auto runs = store.successful_run_durations();
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].config_hash == "h1");
  CHECK(runs[0].duration_s == 90.5);
  REQUIRE(runs[0].config.is_object());
  CHECK(runs[0].config["batch_size"] == 256);
}
