// The sweep's small parts: the auto batch-size search against a fake memory limit, --until,
// durations, RunSpec JSON round trip, the sweep lock.
#include <catch2/catch.hpp>
#include <filesystem>

#include "plan/run_spec_json.h"
#include "sweep/batch_search.h"
#include "sweep/deadline.h"
#include "sweep/progress.h"
#include "sweep/sweep_lock.h"
#include "unit/plan_test_catalog.h"

namespace orch::sweep {
namespace {

std::int64_t search_with_limit(std::int64_t limit, std::vector<std::int64_t>* probes = nullptr) {
  BatchSearch s;
  while (auto b = s.next()) s.report(*b <= limit);
  if (probes)
    for (auto& p : s.probes()) probes->push_back(p.batch);
  return s.result().value_or(0);
}

TEST_CASE("batch search: doubles from 64, then bisects to a multiple of 8", "[sweep]") {
  std::vector<std::int64_t> probes;
  CHECK(search_with_limit(300, &probes) == 296);
  CHECK(probes == std::vector<std::int64_t>{64, 128, 256, 512, 384, 320, 288, 304, 296});
  CHECK(search_with_limit(64) == 64);
  CHECK(search_with_limit(1000) == 1000);
  CHECK(search_with_limit(1023) == 1016);
  for (std::int64_t limit : {100, 257, 777, 4095, 20000}) {
    const std::int64_t got = search_with_limit(limit);
    CHECK(got <= limit);
    CHECK(got > limit - 8);
    CHECK(got % 8 == 0);
  }
}

TEST_CASE("batch search: below the first probe it halves, then narrows to single samples",
          "[sweep]") {
  std::vector<std::int64_t> probes;
  CHECK(search_with_limit(20, &probes) == 16);
  CHECK(probes.front() == 64);
  CHECK(search_with_limit(5) == 5);
  CHECK(search_with_limit(1) == 1);
  BatchSearch none;
  while (auto b = none.next()) none.report(false);
  CHECK_FALSE(none.result().has_value());
  CHECK(none.probes().back().batch == 1);
}

TEST_CASE("deadline: --until is today when still ahead, else tomorrow; bad text is refused",
          "[sweep]") {
  std::tm tm{};
  tm.tm_year = 126;  // 2026
  tm.tm_mon = 10;
  tm.tm_mday = 29;
  tm.tm_hour = 19;
  tm.tm_min = 0;
  tm.tm_isdst = -1;
  const auto seven_pm = std::chrono::system_clock::from_time_t(std::mktime(&tm));
  using std::chrono::hours;
  using std::chrono::minutes;
  CHECK(parse_until("07:30", seven_pm) - seven_pm == hours(12) + minutes(30));
  CHECK(parse_until("23:00", seven_pm) - seven_pm == hours(4));
  CHECK(parse_until("19:00", seven_pm) - seven_pm == hours(24));
  for (const char* bad : {"7", "24:00", "12:60", "noon", "12:5", ""}) {
    CHECK_THROWS_AS(parse_until(bad, seven_pm), std::invalid_argument);
  }
}

TEST_CASE("deadline: on the monotonic clock, the same distance ahead as on the wall clock",
          "[sweep]") {
  using namespace std::chrono;
  const auto wall_now = system_clock::now();
  const auto steady_now = steady_clock::time_point{} + hours(5);
  const auto d = steady_deadline(wall_now + minutes(90) + seconds(3), wall_now, steady_now);
  CHECK(d - steady_now == minutes(90) + seconds(3));
  // A deadline already passed stays in the past.
  CHECK(steady_deadline(wall_now - minutes(1), wall_now, steady_now) < steady_now);
}

TEST_CASE("durations print as m:ss or h:mm:ss", "[sweep]") {
  CHECK(format_duration(0) == "0:00");
  CHECK(format_duration(65.4) == "1:05");
  CHECK(format_duration(3600 * 13 + 61) == "13:01:01");
}

TEST_CASE("a RunSpec survives JSON unchanged (what a child process receives)", "[sweep]") {
  Plan p = test::plan_text(R"(name: j
base:
  device: cpu
  precision: {plugin: amp, dtype: fp16, init_scale: 1024}
  optimizer: {lr: 0.5, impl: fused}
  steps: {warmup: 3, measure: 7}
matrix:
  batch_size: [auto, 48]
)");
  for (const RunSpec& r : p.runs) {
    const RunSpec back = run_spec_from_json(nlohmann::json::parse(run_spec_json(r).dump()));
    CHECK(back.name == r.name);
    CHECK(back.hash == r.hash);
    CHECK(back.repeat == r.repeat);
    CHECK(back.config == r.config);
    CHECK(back.batch_size == r.batch_size);
    CHECK(back.precision.plugin == "amp");
    CHECK(back.precision.params.values() == r.precision.params.values());
    CHECK(std::holds_alternative<double>(back.precision.params.at("init_scale")));
    CHECK(back.optimizer.lr == 0.5);
    CHECK(back.optimizer.impl == "fused");
    CHECK(back.warmup_steps == 3);
    CHECK(back.measure_steps == 7);
    CHECK(back.device == "cpu");
    CHECK(back.swept == r.swept);
  }
  CHECK_FALSE(p.runs[0].batch_size.has_value());
  nlohmann::json broken = run_spec_json(p.runs[1]);
  broken["config"].erase("memory_format");
  CHECK_THROWS_WITH(run_spec_from_json(broken), Catch::Contains("config.memory_format"));
}

TEST_CASE("sweep lock: a second holder is refused with the first one's pid", "[sweep]") {
  const auto dir = std::filesystem::temp_directory_path() / "orch-lock-test";
  std::filesystem::create_directories(dir);
  const std::string path = lock_path((dir / "r.db").string(), "night run/1");
  CHECK(path == (dir / "r.db").string() + ".night%20run%2F1.lock");
  {
    SweepLock first(path);
    CHECK_THROWS_WITH(SweepLock(path), Catch::Contains("already running") &&
                                           Catch::Contains("pid " + std::to_string(getpid())));
  }
  SweepLock again(path);  // released with the first
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace orch::sweep
