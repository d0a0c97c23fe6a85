// The `orch plan` table.
#include "plan/plan_table.h"

#include <catch2/catch.hpp>

#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

RunSpec run(std::string name, std::string hash, int repeat,
            std::map<std::string, std::string> swept) {
  RunSpec r;
  r.name = std::move(name);
  r.hash = std::move(hash);
  r.repeat = repeat;
  r.swept = std::move(swept);
  return r;
}

TEST_CASE("table: columns, alignment and the summary line", "[plan][table]") {
  Plan p;
  p.axes = {"precision", "batch_size"};
  const std::string h1 = "0123456789abcdef0123456789abcdef";
  const std::string h2 = "fedcba9876543210fedcba9876543210";
  p.runs = {run("fp32/b64", h1, 0, {{"precision", "fp32"}, {"batch_size", "64"}}),
            run("fp32/b64", h1, 1, {{"precision", "fp32"}, {"batch_size", "64"}}),
            run("amp-bf16/b128", h2, 0, {{"precision", "amp-bf16"}, {"batch_size", "128"}}),
            run("amp-bf16/b128", h2, 1, {{"precision", "amp-bf16"}, {"batch_size", "128"}})};
  CHECK(format_plan_table(p) ==
        "#  name           hash          precision  batch_size  repeat\n"
        "0  fp32/b64       0123456789ab  fp32       64          0\n"
        "1  fp32/b64       0123456789ab  fp32       64          1\n"
        "2  amp-bf16/b128  fedcba987654  amp-bf16   128         0\n"
        "3  amp-bf16/b128  fedcba987654  amp-bf16   128         1\n"
        "4 runs (2 configurations x 2 repeats)\n");
}

TEST_CASE("table: singular summary and wide indices", "[plan][table]") {
  Plan one = test::plan_text("name: one\n");
  std::string t = format_plan_table(one);
  CHECK_THAT(t, Catch::StartsWith("#  name  hash          repeat\n0  one   "));
  CHECK_THAT(t, Catch::EndsWith("\n1 run (1 configuration x 1 repeat)\n"));

  Plan many = test::plan_text("name: many\nmatrix:\n  seed: [0,1,2,3,4,5,6,7,8,9,10]\n");
  std::string m = format_plan_table(many);
  CHECK_THAT(m, Catch::Contains("\n 9  seed=9 "));
  CHECK_THAT(m, Catch::Contains("\n10  seed=10"));
  CHECK_THAT(m, Catch::EndsWith("\n11 runs (11 configurations x 1 repeat)\n"));
}

}  // namespace
}  // namespace orch
