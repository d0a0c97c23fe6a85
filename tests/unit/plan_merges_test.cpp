// Matrix combinations that resolve to one configuration: the merges a workload makes on
// purpose (a script run has no precision, a built-in run no args) are said under the plan's
// table; an axis that thereby measures nothing is refused, naming the combinations.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "plan/plan_table.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;

struct ScriptFolder {
  ScriptFolder() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("orch-merges-" + std::to_string(rd()));
    fs::create_directories(path);
    std::ofstream(path / "train.py") << "print('x')\n";
  }
  ~ScriptFolder() { fs::remove_all(path); }
  Plan plan(const std::string& yaml) const {
    return make_plan_from_string(yaml, (path / "exp.yaml").string(), test::test_catalog());
  }
  std::vector<PlanError> errors(const std::string& yaml) const {
    try {
      plan(yaml);
    } catch (const PlanErrors& e) {
      return e.errors;
    } catch (const PlanError& e) {
      return {e};
    }
    FAIL("expected the plan to be refused:\n" << yaml);
    return {};
  }
  fs::path path;
};

constexpr const char* kScript =
    "name: s\nbase:\n  workload: {kind: script, command: \"train.py --data synthetic\"}\n";

TEST_CASE("merges: a script matrix joined by a built-in include is refused, naming it",
          "[plan][merges]") {
  ScriptFolder f;
  // The include has no axis key, so it fits, and joins, all four script combinations: each
  // becomes a built-in run without args, and the four would be one configuration.
  const auto errors = f.errors(std::string(kScript) +
                               "matrix:\n"
                               "  args.lr: [0.1, 0.01]\n"
                               "  args.batch: [1, 2]\n"
                               "  include:\n"
                               "    - {workload: {kind: builtin}}\n");
  REQUIRE(errors.size() == 2);  // one per axis
  CHECK(errors[0].key_path == "matrix.args.lr");
  CHECK(errors[0].line == 5);
  CHECK_THAT(errors[0].message, Contains("no configuration uses this axis"));
  CHECK_THAT(errors[0].message, Contains("a built-in run, which has no args"));
  CHECK_THAT(errors[0].message, Contains("(args.lr=0.1, args.batch=1, workload="));
  CHECK_THAT(errors[0].message, Contains("an include entry that sets `workload`"));
  CHECK(errors[1].key_path == "matrix.args.batch");
}

TEST_CASE("merges: a precision axis over script runs only is refused", "[plan][merges]") {
  ScriptFolder f;
  const auto errors = f.errors(std::string(kScript) + "matrix:\n  precision: [fp32, amp]\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].key_path == "matrix.precision");
  CHECK_THAT(errors[0].message, Contains("a script run, which has no precision"));
  CHECK_THAT(errors[0].message, Contains("remove the axis"));
}

TEST_CASE("merges: crossing the two kinds merges on purpose, and the table says which",
          "[plan][merges]") {
  ScriptFolder f;
  const Plan p = f.plan(std::string(kScript) +
                        "matrix:\n  workload.kind: [builtin, script]\n  precision: [fp32, amp]\n"
                        "  args.workers: [4, 8]\n");
  std::set<std::string> hashes;
  for (const RunSpec& r : p.runs) hashes.insert(r.hash);
  CHECK(hashes.size() == 4);
  REQUIRE(p.notes.size() == 1);
  CHECK_THAT(p.notes[0], Contains("8 matrix combinations are 4 configurations"));
  CHECK_THAT(p.notes[0], Contains("(workload.kind=builtin, precision=fp32, args.workers=4) also "
                                  "stands for (workload.kind=builtin, precision=fp32, "
                                  "args.workers=8)"));
  CHECK_THAT(format_plan_table(p), Contains("\nnote: 8 matrix combinations are 4"));
}

TEST_CASE("merges: a value lost while the axis' other values are used is refused by value",
          "[plan][merges]") {
  ScriptFolder f;
  // amp reaches no built-in run (the exclude leaves it only script combinations).
  const auto errors = f.errors(std::string(kScript) +
                               "matrix:\n  workload.kind: [builtin, script]\n"
                               "  precision: [fp32, amp]\n"
                               "  exclude:\n    - {workload.kind: builtin, precision: amp}\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].key_path == "matrix.precision[1]");
  CHECK_THAT(errors[0].message, Contains("no configuration uses this value"));
}

TEST_CASE("merges: built-in combinations that resolve to one configuration stay an error",
          "[plan][merges]") {
  // Two include entries that fit no combination make two new ones, alike.
  const PlanError e = test::plan_failure(
      "name: m\nmatrix:\n  batch_size: [64]\n  include:\n    - {batch_size: 32}\n"
      "    - {batch_size: 32}\n");
  CHECK(e.key_path == "matrix");
  CHECK_THAT(e.message, Contains("combinations (batch_size=32) and (batch_size=32) resolve to "
                                 "the same configuration"));
}

}  // namespace
}  // namespace orch
