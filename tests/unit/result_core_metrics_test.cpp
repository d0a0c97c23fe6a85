// The typed core metrics (result/core_metrics.h): written and read through one table, the
// document's other metrics kept, and ill-typed values read as leniently as before.
#include <catch2/catch.hpp>

#include "result/core_metrics.h"
#include "result/result_document.h"

using namespace orch;
using json = nlohmann::json;

namespace {

CoreMetrics every_metric() {
  CoreMetrics c;
  c.images_per_s = 1234.5;
  c.step_ms_mean = 207.4;
  c.device_step_ms_mean = 205.0;
  c.step_ms_p50 = 206.0;
  c.step_ms_p90 = 210.0;
  c.step_ms_p99 = 230.0;
  c.data_wait_ms_mean = 1.25;
  c.gpu_idle_ms_mean = 0.5;
  c.gpu_idle_share = 0.5 / 207.4;
  c.startup_s = 0.75;
  c.setup_s = 3.5;
  c.warmup_s = 12.0;
  c.measure_s = 20.7;
  c.warmup_steps = 30;
  c.warmup_steady = true;
  c.loss_first = 6.9;
  c.loss_last = 6.1;
  c.skipped_steps = 2;
  c.cudnn_benchmark = false;
  c.param_checksum = -17.25;
  c.peak_allocated_bytes = 20'000'000'000;
  c.peak_reserved_bytes = 22'000'000'000;
  c.host_peak_rss_bytes = 3'000'000'000;
  c.gpu_other_processes = 1;
  return c;
}

}  // namespace

TEST_CASE("core metrics: struct -> JSON -> struct", "[result][metrics]") {
  const CoreMetrics c = every_metric();
  json j;
  write_core_metrics(c, j);
  CHECK(read_core_metrics(j) == c);
  // The JSON the runner has always written: counts and sizes integers, flags 1 or 0.
  CHECK(j["images_per_s"] == 1234.5);
  CHECK(j["images_per_s"].is_number_float());
  CHECK(j["warmup_steps"].is_number_integer());
  CHECK(j["peak_reserved_bytes"].is_number_integer());
  CHECK(j["peak_reserved_bytes"] == 22'000'000'000);
  CHECK(j["warmup_steady"] == 1);
  CHECK(j["cudnn_benchmark"] == 0);
  CHECK(j["cudnn_benchmark"].is_number_integer());
  CHECK(j["skipped_steps"].is_number_float());
  CHECK(j.size() == 24);
  // Absent members write nothing, and read back absent.
  json empty;
  write_core_metrics(CoreMetrics{}, empty);
  CHECK(empty == json::object());
  CHECK(read_core_metrics(empty) == CoreMetrics{});
  CHECK(read_core_metrics(json(nullptr)) == CoreMetrics{});
  CHECK(read_core_metrics(json::array()) == CoreMetrics{});
}

TEST_CASE("core metrics: the document's other metrics are kept", "[result][metrics]") {
  json metrics = {{"gpu_util_mean_pct", 97.5}, {"my_script_metric", 3}, {"images_per_s", 1.0}};
  write_core_metrics(every_metric(), metrics);
  CHECK(metrics["gpu_util_mean_pct"] == 97.5);
  CHECK(metrics["my_script_metric"] == 3);
  CHECK(metrics["images_per_s"] == 1234.5);  // a core member that is set replaces its entry

  // A document read and written again is the same document, metric for metric: the section
  // stays JSON, so an integer throughput from a script stays an integer.
  const json doc = {{"format", "orch.result"},
                    {"version", 2},
                    {"status", "ok"},
                    {"metrics",
                     {{"images_per_s", 1000},
                      {"unknown_metric", 1.5},
                      {"text_metric", "fast"},
                      {"warmup_steady", true}}}};
  const ResultDocument d = result_from_json(doc);
  CHECK(to_json(d) == doc);
  CHECK(to_json(d).dump() == doc.dump());
  CHECK(d.core_metrics().images_per_s == 1000.0);
  CHECK(d.metric("unknown_metric") == 1.5);
}

TEST_CASE("core metrics: ill-typed values read as leniently as before", "[result][metrics]") {
  const json metrics = {{"images_per_s", "1234"},   // a string: absent
                        {"step_ms_mean", nullptr},  // null: absent
                        {"step_ms_p50", true},      // a boolean: 1
                        {"loss_last", 3},           // an integer: its value
                        {"warmup_steps", 12.6},     // a float for a count: rounded
                        {"peak_reserved_bytes", 1e9},
                        {"cudnn_benchmark", 2},  // a flag: non-zero is set
                        {"warmup_steady", false},
                        {"gpu_other_processes", json::array()}};
  const CoreMetrics c = read_core_metrics(metrics);
  CHECK_FALSE(c.images_per_s);
  CHECK_FALSE(c.step_ms_mean);
  CHECK(c.step_ms_p50 == 1.0);
  CHECK(c.loss_last == 3.0);
  CHECK(c.warmup_steps == 13);
  CHECK(c.peak_reserved_bytes == 1'000'000'000);
  CHECK(c.cudnn_benchmark == true);
  CHECK(c.warmup_steady == false);
  CHECK_FALSE(c.gpu_other_processes);

  // The typed members agree with the lenient lookup by key the commands used before.
  ResultDocument d;
  d.metrics = metrics;
  CHECK(d.core_metrics().images_per_s == d.metric(metric_key::kImagesPerS));
  CHECK(d.core_metrics().step_ms_p50 == d.metric(metric_key::kStepMsP50));
  CHECK(d.core_metrics().loss_last == d.metric(metric_key::kLossLast));
}
