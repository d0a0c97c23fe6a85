// A run's phases (result/run_phases.h): read from a document's metrics, completed with the
// sweep's view of the process, added up into the line `orch sweep` ends with
// (sweep/time_shares.h); and the process's age that the start-up phase is measured from.
#include "result/run_phases.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "sweep/time_shares.h"
#include "telemetry/process_age.h"

using namespace orch;
using json = nlohmann::json;

TEST_CASE("run phases are read from metrics; absent and negative ones are not", "[phases]") {
  CHECK_FALSE(run_phases(json::object()).has_value());
  CHECK_FALSE(run_phases(json(nullptr)).has_value());
  CHECK_FALSE(run_phases({{"images_per_s", 10.0}}).has_value());
  const auto p = run_phases({{"warmup_s", 3.5}, {"measure_s", 2.0}, {"startup_s", -1.0}});
  REQUIRE(p.has_value());
  CHECK(p->warmup_s == 3.5);
  CHECK(p->measure_s == 2.0);
  CHECK(p->startup_s == 0.0);
  CHECK(p->inside_s() == 5.5);
}

TEST_CASE("the sweep's process time gives the teardown: what the run did not measure", "[phases]") {
  json m = {{"startup_s", 1.0},
            {"setup_s", 2.0},
            {"warmup_s", 3.0},
            {"measure_s", 4.0},
            {"after_s", 0.5}};
  add_process_phases(m, 12.0);
  CHECK(m["process_s"] == 12.0);
  CHECK(m["teardown_s"].get<double>() == Approx(1.5));
  // Clock skew between the two views never makes a negative phase.
  json short_view = {{"measure_s", 4.0}, {"warmup_s", 3.0}};
  add_process_phases(short_view, 6.0);
  CHECK(short_view["teardown_s"] == 0.0);
  // A run that measured nothing (it failed) gets its process time alone.
  json failed = json::object();
  add_process_phases(failed, 7.0);
  CHECK(failed == json{{"process_s", 7.0}});
  json not_an_object = json::array();
  add_process_phases(not_an_object, 7.0);
  CHECK(not_an_object == json::array());
}

TEST_CASE("the sweep's time line: measured first, then the rest by size, then between runs",
          "[phases][sweep]") {
  sweep::SweepTime t;
  t.wall_s = 100;
  t.slots = 2;
  t.runs = 5;
  t.phases.measure_s = 80;
  t.phases.warmup_s = 40;
  t.phases.startup_s = 20;
  t.phases.setup_s = 10;
  t.phases.after_s = 6;
  t.phases.teardown_s = 0.5;  // 0.25%: left out of the line
  t.unmeasured_s = 14;
  // 200 slot-seconds; runs took 170.5; 29.5 s between runs.
  CHECK(sweep::time_shares_line(t) ==
        "measured 40% of the sweep's wall time (1:40 on 2 GPUs); warm-up 20%, start-up 10%, "
        "failed runs 7%, set-up 5%, after the steps 3%, between runs 15%");
  const auto shares = sweep::time_shares(t);
  double sum = 0;
  for (const auto& [label, share] : shares) sum += share;
  CHECK(sum == Approx(1.0));

  t.slots = 1;
  t.cpu = true;
  t.wall_s = 3725;
  CHECK(sweep::time_shares_line(t).rfind(
            "measured 2% of the sweep's wall time (1:02:05 on the CPU)", 0) == 0);
  // Runs that took more than the wall time (clock skew): nothing between runs, never negative.
  t.wall_s = 10;
  CHECK(sweep::time_shares(t).back() == std::make_pair(std::string("between runs"), 0.0));
  sweep::SweepTime nothing;
  nothing.wall_s = 5;
  CHECK(sweep::time_shares_line(nothing).empty());
}

TEST_CASE("a /proc stat line's start time, whatever the command name holds", "[phases]") {
  const std::string tail = " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 20 21 22";
  CHECK(stat_start_ticks("123 (orch)" + tail) == 424242ULL);
  CHECK(stat_start_ticks("123 (a) b (c d)" + tail) == 424242ULL);
  CHECK_FALSE(stat_start_ticks("123 orch S 1 2").has_value());
  CHECK_FALSE(stat_start_ticks("123 (orch) S 1 2 3").has_value());
  CHECK_FALSE(
      stat_start_ticks("1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4x 20").has_value());
}

TEST_CASE("the process's age grows with the wall clock", "[phases]") {
  const auto a = process_age_s();
  REQUIRE(a.has_value());
  CHECK(*a >= 0);
  CHECK(*a < 24 * 3600.0);  // this test binary started today
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const auto b = process_age_s();
  REQUIRE(b.has_value());
  // /proc's start time is in clock ticks (10 ms here), the clock itself in nanoseconds.
  CHECK(*b - *a >= 0.05);
  CHECK(*b - *a < 5.0);
}
