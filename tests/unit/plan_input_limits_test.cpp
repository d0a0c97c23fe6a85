// Inputs that are files but not what they seem, and plans far over the limit: refused with a
// message naming the path or the size, before anything large is read or expanded.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "plan/matrix.h"
#include "plan/planner.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

struct TempFolder {
  fs::path path = fs::temp_directory_path() / ("orch-input-" + std::to_string(::getpid()));
  TempFolder() { fs::create_directories(path); }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

PlanError read_failure(const std::string& path) {
  try {
    read_experiment_file(path);
  } catch (const PlanError& e) {
    return e;
  }
  FAIL("no PlanError for " << path);
  throw std::logic_error("unreachable");
}

TEST_CASE("experiment file: a device, a folder or a FIFO is refused unread", "[plan]") {
  const auto start = std::chrono::steady_clock::now();
  PlanError zero = read_failure("/dev/zero");  // would never end
  CHECK(zero.file == "/dev/zero");
  CHECK_THAT(zero.what(), Catch::StartsWith("/dev/zero: ") &&
                              Catch::Contains("a character device, not a regular file"));
  TempFolder tmp;
  CHECK_THAT(read_failure(tmp.path.string()).what(), Catch::Contains("a folder"));
  const fs::path fifo = tmp.path / "x.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(read_failure(fifo.string()).what(), Catch::Contains("FIFO"));  // no writer: no wait
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("experiment file: over 1 MiB is refused with the path and the limit", "[plan]") {
  TempFolder tmp;
  const fs::path big = tmp.path / "big.yaml";
  {
    std::ofstream out(big);
    out << "name: big\n";
    out << "# " << std::string(kMaxExperimentFileBytes, 'x') << "\n";
  }
  PlanError e = read_failure(big.string());
  CHECK(e.file == big.string());
  CHECK_THAT(e.what(), Catch::Contains("1048576 bytes (1 MiB)"));
  // At the limit it is read (and planned) as any other file.
  const fs::path ok = tmp.path / "ok.yaml";
  {
    std::ofstream out(ok);
    out << "name: ok\n# " << std::string(kMaxExperimentFileBytes - 20, 'x') << "\n";
  }
  CHECK(make_plan(ok.string(), test::test_catalog()).runs.size() == 1);
}

MatrixAxis numbered_axis(const std::string& path, int n) {
  MatrixAxis a;
  a.path = path;
  for (int i = 0; i < n; ++i) a.values.push_back(MatrixCell{i, nullptr, path});
  return a;
}

TEST_CASE("matrix: far over the limit is refused before enumerating, excludes counted first",
          "[plan][matrix]") {
  MatrixSpec spec;
  for (int a = 0; a < 6; ++a) spec.axes.push_back(numbered_axis("a" + std::to_string(a), 10));
  const auto start = std::chrono::steady_clock::now();
  MatrixExpansion ex = expand_matrix(spec, 10000);  // 10^6 combinations
  CHECK(ex.over_limit);
  CHECK(ex.count == 1000000);
  CHECK_FALSE(ex.counted_before_exclude);
  CHECK(ex.combinations.empty());  // an enumeration would have kept the first 10000

  SECTION("an exclude that cannot bring it under the limit does not make it enumerate") {
    MatrixEntry e;
    e.key_path = "matrix.exclude[0]";
    e.pairs.push_back(MatrixPair{"a0", {}, MatrixCell{0, nullptr, "a0"}});  // removes 10^5
    spec.exclude.push_back(e);
    MatrixExpansion ex2 = expand_matrix(spec, 10000);
    CHECK(ex2.over_limit);
    CHECK(ex2.counted_before_exclude);
    CHECK(ex2.combinations.empty());
  }
  SECTION("excludes that could bring it under the limit are applied, exactly") {
    MatrixSpec two;
    two.axes = {numbered_axis("a", 1000), numbered_axis("b", 200)};  // 200,000
    MatrixEntry e;
    e.key_path = "matrix.exclude[0]";
    e.pairs.push_back(MatrixPair{"b", {}, MatrixCell{0, nullptr, "b"}});  // removes 1000
    two.exclude.push_back(e);
    MatrixExpansion ex3 = expand_matrix(two, 199000);
    CHECK_FALSE(ex3.over_limit);
    CHECK(ex3.count == 199000);
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

}  // namespace
}  // namespace orch
