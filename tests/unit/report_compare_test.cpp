// `orch compare` on a fixture database: selectors (name, run id, hash prefix, forced readings,
// ambiguity, unknown, failed) and the before/after table with the change in percent.
#include <catch2/catch.hpp>

#include "report/compare.h"
#include "report/input_error.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch;
using Catch::Matchers::Contains;
using Catch::Matchers::Matches;

namespace {

struct Fixture {
  test::TempDb db;
  storage::Store store{db.path};
  std::int64_t sweep = store.open_sweep("s", "exp", "");
  std::int64_t fp32_run = 0, amp_run = 0;

  Fixture() {
    auto fp32 = [](int repeat, double ips) {
      auto d = test::result_doc("fp32", "aaaa1111", repeat, "ok", ips);
      d["metrics"]["gpu_util_mean_pct"] = 80.0;
      d["metrics"]["power_mean_w"] = 400.0;
      d["metrics"]["data_wait_ms_mean"] = 2.0;
      d["metrics"]["peak_allocated_bytes"] = 10.0 * (1 << 30);
      return d;
    };
    fp32_run = store.record(sweep, fp32(0, 1000));
    store.record(sweep, fp32(1, 1000));
    auto amp = test::result_doc("amp-bf16/channels_last", "bbbb2222", 0, "ok", 2000);
    amp["metrics"]["gpu_util_mean_pct"] = 96.0;
    amp["metrics"]["power_mean_w"] = 500.0;
    amp["metrics"]["data_wait_ms_mean"] = 1.0;
    amp["metrics"]["peak_allocated_bytes"] = 5.0 * (1 << 30);
    amp_run = store.record(sweep, amp);
    store.record(sweep, test::result_doc("broken", "aaaa3333", 0, "oom"));
    store.record(sweep, test::result_doc("12", "cccc4444", 0, "ok", 10));  // a numeric name
  }
  std::vector<storage::RunRecord> runs() const { return store.runs(sweep); }
};

}  // namespace

TEST_CASE("compare shows the article's before/after table with the change in percent",
          "[report][compare]") {
  Fixture f;
  const auto runs = f.runs();
  const auto a = select_runs(f.store, runs, "fp32");
  const auto b = select_runs(f.store, runs, "amp-bf16/channels_last");
  CHECK(a.runs.size() == 2);
  CHECK(b.runs.size() == 1);
  const std::string t = format_comparison(a, b);
  INFO(t);
  CHECK_THAT(t, Contains("A: fp32 (config aaaa1111, 2 runs)"));
  CHECK_THAT(t, Contains("B: amp-bf16/channels_last (config bbbb2222, 1 run)"));
  CHECK_THAT(t, Matches("(.|\n)*throughput \\(img/s\\) +1000\\.0 +2000\\.0 +\\+100\\.0%(.|\n)*"));
  CHECK_THAT(t, Matches("(.|\n)*mean GPU utilization \\(%\\) +80\\.0 +96\\.0 +\\+20\\.0%(.|\n)*"));
  CHECK_THAT(t, Matches("(.|\n)*peak memory \\(GiB\\) +10\\.00 +5\\.00 +-50\\.0%(.|\n)*"));
  CHECK_THAT(t, Matches("(.|\n)*mean power \\(W\\) +400\\.0 +500\\.0 +\\+25\\.0%(.|\n)*"));
  // step 256 ms -> 128 ms; data wait 2 -> 1; compute 254 -> 127
  CHECK_THAT(t, Matches("(.|\n)*step time \\(ms\\) +256\\.00 +128\\.00 +-50\\.0%(.|\n)*"));
  CHECK_THAT(t, Matches("(.|\n)*  data wait \\(ms\\) +2\\.00 +1\\.00 +-50\\.0%(.|\n)*"));
  CHECK_THAT(t, Matches("(.|\n)*  compute \\(ms\\) +254\\.00 +127\\.00 +-50\\.0%(.|\n)*"));
}

TEST_CASE("compare selectors: run id, hash prefix, forced readings", "[report][compare]") {
  Fixture f;
  const auto runs = f.runs();
  const auto by_id = select_runs(f.store, runs, std::to_string(f.amp_run));
  CHECK(by_id.runs.size() == 1);
  CHECK(by_id.label == "run " + std::to_string(f.amp_run) + " (amp-bf16/channels_last, sweep s)");
  const auto by_hash = select_runs(f.store, runs, "bbbb");
  CHECK(by_hash.config_hash == "bbbb2222");
  CHECK(select_runs(f.store, runs, "hash:aaaa1").runs.size() == 2);
  CHECK(select_runs(f.store, runs, "run:" + std::to_string(f.fp32_run)).runs.size() == 1);
  CHECK(select_runs(f.store, runs, "name:12").config_hash == "cccc4444");
}

TEST_CASE("compare refuses unknown, ambiguous and unsuccessful selections with the candidates",
          "[report][compare]") {
  Fixture f;
  const auto runs = f.runs();
  CHECK_THROWS_AS(select_runs(f.store, runs, "bf16"), InputError);
  CHECK_THROWS_WITH(select_runs(f.store, runs, "bf16"),
                    Contains("not a configuration name, run id or hash prefix") &&
                        Contains("amp-bf16/channels_last") && Contains("fp32"));
  // "aaaa" prefixes two configurations
  CHECK_THROWS_WITH(select_runs(f.store, runs, "aaaa"), Contains("ambiguous") &&
                                                            Contains("hash:aaaa1111") &&
                                                            Contains("hash:aaaa3333"));
  // "12" is a configuration name and could be run id 12 only if it existed: name wins here
  CHECK(select_runs(f.store, runs, "12").config_hash == "cccc4444");
  // a name that is also an existing run id
  const std::string id = std::to_string(f.amp_run);
  f.store.record(f.sweep, test::result_doc(id, "dddd5555", 0, "ok", 5));
  CHECK_THROWS_WITH(select_runs(f.store, f.runs(), id),
                    Contains("ambiguous") && Contains("run:" + id));
  CHECK_THROWS_WITH(select_runs(f.store, runs, "broken"),
                    Contains("no successful run") && Contains("oom"));
}

TEST_CASE("compare says which settings and environment fields differ", "[report][compare]") {
  test::TempDb db;
  storage::Store store{db.path};
  const auto night1 = store.open_sweep("night-1", "exp", "");
  const auto night2 = store.open_sweep("night-2", "exp", "");
  auto doc = [](const std::string& name, const std::string& hash, int batch,
                const std::string& impl, int threads) {
    auto d = test::result_doc(name, hash, 0, "ok", 100.0 * batch);
    d["config"]["batch_size"] = batch;
    d["config"]["optimizer"] = {{"impl", impl}, {"lr", 0.1}};
    d["environment"]["torch_threads"] = threads;
    d["environment"]["variables"] = nlohmann::json::object();
    if (threads == 1) d["environment"]["variables"]["OMP_NUM_THREADS"] = "1";
    return d;
  };
  const auto small = store.record(night1, doc("b8/loop", "aaaa1111", 8, "loop", 2));
  store.record(night1, doc("b16/foreach", "bbbb2222", 16, "foreach", 2));
  const auto small_again = store.record(night2, doc("b8/loop", "aaaa1111", 8, "loop", 1));

  // Two configurations of one sweep: the settings that differ, and the same environment.
  const auto runs = store.runs(night1);
  const auto a = select_runs(store, runs, "b8/loop");
  const auto b = select_runs(store, runs, "b16/foreach");
  const auto settings = setting_differences(a, b);
  REQUIRE(settings.size() == 2);
  CHECK(settings[0].key == "batch_size");
  CHECK(settings[0].a == "8");
  CHECK(settings[0].b == "16");
  CHECK(settings[1].key == "optimizer.impl");
  const std::string t = format_comparison(a, b);
  INFO(t);
  CHECK_THAT(t, Matches("(.|\n)*\n  batch_size +8 -> 16\n(.|\n)*"));
  CHECK_THAT(t, Matches("(.|\n)*\n  optimizer.impl +loop -> foreach\n(.|\n)*"));
  CHECK_THAT(t, Contains("environment: the same in all") && !Contains("optimizer.lr"));

  // Two runs of one configuration on two nights: each named with its sweep, the environment's
  // differences flagged.
  const auto r1 = select_runs(store, runs, "run:" + std::to_string(small));
  const auto r2 = select_runs(store, runs, "run:" + std::to_string(small_again));
  const std::string nights = format_comparison(r1, r2);
  INFO(nights);
  CHECK_THAT(nights, Contains("A: run " + std::to_string(small) + " (b8/loop, sweep night-1)"));
  CHECK_THAT(nights,
             Contains("B: run " + std::to_string(small_again) + " (b8/loop, sweep night-2)"));
  CHECK_THAT(nights, Contains("settings: the same configuration"));
  CHECK_THAT(nights, Contains("DIFFERENT ENVIRONMENTS: 2 of") && Contains("between the runs"));
  CHECK_THAT(nights, Matches("(.|\n)*\n  torch threads +2 -> 1\n(.|\n)*"));
  CHECK_THAT(nights, Matches("(.|\n)*\n  OMP_NUM_THREADS +unset -> 1\n(.|\n)*"));
}
