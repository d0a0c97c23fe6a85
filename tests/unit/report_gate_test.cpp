// The gate of `orch compare --sweeps A B --fail-on slower[=PCT]`: which conditions it accepts,
// which configurations fail it (significantly slower by more than PCT, never an inconclusive
// one), and what it says either way.
#include <catch2/catch.hpp>

#include "report/input_error.h"
#include "report/sweep_diff.h"

namespace orch {
namespace {

using Catch::Matchers::Contains;

std::vector<storage::RunRecord> runs(const std::string& name, std::vector<double> values) {
  std::vector<storage::RunRecord> out;
  for (double v : values) {
    storage::RunRecord r;
    r.name = name;
    r.config_hash = "hash-" + name;
    r.status = "ok";
    r.metrics["images_per_s"] = v;
    out.push_back(r);
  }
  return out;
}

SweepDiff two_nights() {
  std::vector<storage::RunRecord> a, b;
  auto add = [](std::vector<storage::RunRecord>& to, std::vector<storage::RunRecord> more) {
    to.insert(to.end(), more.begin(), more.end());
  };
  add(a, runs("much", {100, 101, 99}));  // -24%, significant
  add(b, runs("much", {76, 77, 75}));
  add(a, runs("little", {200, 201, 199}));  // -3%, significant
  add(b, runs("little", {194, 195, 193}));
  add(a, runs("noise", {300, 330, 270}));  // -10% but within its noise: inconclusive
  add(b, runs("noise", {270, 240, 300}));
  add(a, runs("faster", {100, 101, 99}));  // +20%
  add(b, runs("faster", {120, 121, 119}));
  add(a, runs("once", {100}));  // -50%, but one run a side
  add(b, runs("once", {50}));
  return diff_sweeps(a, b);
}

TEST_CASE("fail-on: slower or slower=PCT, nothing else", "[report][gate]") {
  CHECK(parse_fail_on("slower") == 0);
  CHECK(parse_fail_on("slower=5") == 5);
  CHECK(parse_fail_on("slower=2.5%") == 2.5);
  CHECK(parse_fail_on("slower=0") == 0);
  CHECK(parse_fail_on("slower=100") == 100);
  for (const char* bad : {"", "faster", "Slower", "slower=", "slower=%", "slower=-1", "slower=101",
                          "slower=5x", "slower=nan", "slower=inf", "slower 5", "slower=1e400"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_fail_on(bad), InputError);
    CHECK_THROWS_WITH(parse_fail_on(bad), Contains("allowed: slower, or slower=PCT"));
  }
}

TEST_CASE("fail-on: the significantly slower configurations, by more than PCT", "[report][gate]") {
  const SweepDiff d = two_nights();
  auto names = [](const std::vector<ConfigChange>& v) {
    std::vector<std::string> out;
    for (const auto& c : v) out.push_back(c.name);
    return out;
  };
  CHECK(names(slower_than(d, 0)) == std::vector<std::string>{"little", "much"});
  CHECK(names(slower_than(d, 5)) == std::vector<std::string>{"much"});
  CHECK(slower_than(d, 24.5).empty());

  const std::string fail = format_gate(d, slower_than(d, 5), 5);
  INFO(fail);
  CHECK_THAT(fail, Contains("FAIL: 1 configuration(s) significantly slower in B by more than 5%:\n"
                            "  much  -24.0% (100.0 -> 76.0 img/s)\n"));
  const std::string pass = format_gate(d, slower_than(d, 30), 30);
  INFO(pass);
  // "noise" and "once" could not be judged; the gate says so rather than calling them fine.
  CHECK(pass ==
        "gate passed: no configuration significantly slower in B by more than 30% (5 compared; 2 "
        "could not be judged (inconclusive, not enough repeats or no successful run) and pass "
        "unjudged)\n");
}

}  // namespace
}  // namespace orch
