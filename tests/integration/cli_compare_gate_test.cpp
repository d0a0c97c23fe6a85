// `orch compare --sweeps A B` as cron and CI run it: two nights recorded in a database, the
// second with OMP_NUM_THREADS=1 and slower; the binary names the environment's differences,
// and `--fail-on slower[=PCT]` exits 1 listing the slower configurations, 0 when none is
// slower by more than PCT, 2 for a condition it does not know.
#include <catch2/catch.hpp>
#include <regex>

#include "integration/test_support.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// Night 1: threads 2, no variable; night 2: OMP_NUM_THREADS=1, torch threads 1, "b8" 24%
// slower (significant), "b16" 3% slower (significant), "b32" the same within its noise.
void record_nights(const fs::path& db) {
  storage::Store store(db.string());
  const auto one = store.open_sweep("night-1", "exp", "");
  const auto two = store.open_sweep("night-2", "exp", "");
  auto doc = [](const std::string& name, int repeat, double ips, bool omp) {
    auto d = test::result_doc(name, "hash-" + name, repeat, "ok", ips);
    d["environment"]["torch_threads"] = omp ? 1 : 2;
    d["environment"]["variables"] = nlohmann::json::object();
    if (omp) d["environment"]["variables"]["OMP_NUM_THREADS"] = "1";
    return d;
  };
  const double b8[] = {100, 101, 99}, b8_slow[] = {76, 77, 75};
  const double b16[] = {200, 201, 199}, b16_slow[] = {194, 195, 193};
  const double b32[] = {300, 330, 270}, b32_again[] = {310, 280, 300};
  for (int i = 0; i < 3; ++i) {
    store.record(one, doc("b8", i, b8[i], false));
    store.record(two, doc("b8", i, b8_slow[i], true));
    store.record(one, doc("b16", i, b16[i], false));
    store.record(two, doc("b16", i, b16_slow[i], true));
    store.record(one, doc("b32", i, b32[i], false));
    store.record(two, doc("b32", i, b32_again[i], true));
  }
}

TEST_CASE("compare --sweeps names what differs, and --fail-on gates a slower night",
          "[cli][compare]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "night.db";
  record_nights(db);
  const std::string orch = "--db '" + db.string() + "' compare --sweeps night-1 night-2";

  auto plain = test::run_orch(orch);
  INFO(plain.output);
  CHECK(plain.exit_code == 0);  // without a gate, a verdict is not a failure
  CHECK_THAT(plain.output, Contains("DIFFERENT ENVIRONMENTS: 2 of"));
  CHECK(std::regex_search(plain.output, std::regex(R"(\n  OMP_NUM_THREADS +unset -> 1\n)")));
  CHECK(std::regex_search(plain.output, std::regex(R"(\n  torch threads +2 -> 1\n)")));
  CHECK(std::regex_search(plain.output, std::regex(R"(\nb8 .* -24\.0% +slower\n)")));
  CHECK(std::regex_search(plain.output, std::regex(R"(\nb32 .* inconclusive \(n=3\); )")));
  CHECK_THAT(plain.output, !Contains("  no change") && !Contains("gate"));

  auto any = test::run_orch(orch + " --fail-on slower");
  INFO(any.output);
  CHECK(any.exit_code == 1);
  CHECK_THAT(any.output, Contains("FAIL: 2 configuration(s) significantly slower in B:"));
  CHECK(
      std::regex_search(any.output, std::regex(R"(\n  b8  -24\.0% \(100\.0 -> 76\.0 img/s\)\n)")));
  CHECK(std::regex_search(any.output, std::regex(R"(\n  b16  -3\.0% )")));

  auto five = test::run_orch(orch + " --fail-on slower=5%");
  INFO(five.output);
  CHECK(five.exit_code == 1);
  CHECK_THAT(five.output, Contains("FAIL: 1 configuration(s) significantly slower in B by more "
                                   "than 5%:"));
  CHECK_THAT(five.output, !Contains("  b16  -3.0%"));

  auto loose = test::run_orch(orch + " --fail-on slower=30");
  INFO(loose.output);
  CHECK(loose.exit_code == 0);
  CHECK_THAT(loose.output, Contains("gate passed: no configuration significantly slower in B by "
                                    "more than 30% (3 compared; 1 could not be judged"));

  // The nights the other way round: faster is never a failure.
  auto back = test::run_orch("--db '" + db.string() +
                             "' compare --sweeps night-2 night-1 --fail-on slower");
  INFO(back.output);
  CHECK(back.exit_code == 0);

  for (const char* bad : {"faster", "slower=", "slower=-1", "slower=abc", "slower=101"}) {
    auto r = test::run_orch(orch + " --fail-on '" + bad + "'");
    INFO(bad << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains("allowed: slower, or slower=PCT"));
  }
  auto alone = test::run_orch("--db '" + db.string() +
                              "' compare b8 b16 --sweep night-1 "
                              "--fail-on slower");
  CHECK(alone.exit_code == 2);
  CHECK_THAT(alone.output, Contains("--fail-on judges two sweeps: use it with --sweeps A B"));
}

}  // namespace
}  // namespace orch
