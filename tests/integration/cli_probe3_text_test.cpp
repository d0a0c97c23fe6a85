// Probe 3 (issue 39): text that is not UTF-8 in JSON output, a plan and a run's environment
// (F11), and file and sweep names from a shared results folder escaped by ingest (F7).
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "integration/test_support.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using test::q;
using test::write;

TEST_CASE("sweeps --json lists a sweep whose experiment file name is Latin-1", "[cli][utf8]") {
  test::TempDir tmp;
  const fs::path yaml = tmp.path() / "caf\xe9.yaml", db = tmp.path() / "r.db";
  write(yaml, test::kTiny);
  auto r = test::run_orch("--db " + q(db) + " run " + q(yaml));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const fs::path out = tmp.path() / "sweeps.json";
  r = test::run_orch("--db " + q(db) + " sweeps --json > " + q(out));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const auto listing = nlohmann::json::parse(test::slurp(out));
  REQUIRE(listing.is_array());
  REQUIRE(listing.size() == 1);
  CHECK(listing[0].at("experiment_file").get<std::string>().find("caf\xef\xbf\xbd") !=
        std::string::npos);
}

TEST_CASE("plan with a Latin-1 dataset root is exit 2 naming it, not an internal error",
          "[cli][utf8]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", test::kTiny);
  fs::create_directories(tmp.path() / "src\xe9");
  auto r =
      test::run_orch("plan " + q(tmp.path() / "tiny.yaml") + " 'data={plugin: imagefolder, root: " +
                     (tmp.path() / "src\xe9").string() + ", image_size: 32}'");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("not UTF-8"));
  CHECK_THAT(r.output, !Contains("type_error"));
}

TEST_CASE("a sweep runs while a watched variable holds bytes that are not UTF-8", "[cli][utf8]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", test::kTiny);
  auto r = test::run_command("OMP_NUM_THREADS=\"$(printf '2\\377')\" '" + std::string(ORCH_BINARY) +
                             "' --db " + q(tmp.path() / "v.db") + " sweep " +
                             q(tmp.path() / "tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, !Contains("type_error"));
}

TEST_CASE("a sweep's warm worker runs under a database folder whose name is Latin-1",
          "[cli][utf8]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", std::string(test::kTiny) + "  isolation: worker\n");
  const fs::path folder = tmp.path() / "caf\xe9";
  fs::create_directories(folder);
  auto r = test::run_orch("--db " + q(folder / "r.db") + " sweep " + q(tmp.path() / "tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("1 ok") && !Contains("type_error"));
  const auto runs = test::runs_of(folder / "r.db", "tiny");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "ok");
}

TEST_CASE("doctor shows a variable's control characters escaped", "[cli][utf8]") {
  auto r = test::run_command("CUDA_LAUNCH_BLOCKING=\"$(printf '1\\033[2J')\" '" +
                             std::string(ORCH_BINARY) + "' doctor");
  INFO(r.output);
  CHECK_THAT(r.output, Contains("CUDA_LAUNCH_BLOCKING") && Contains("1\\x1b[2J"));
  CHECK(r.output.find('\x1b') == std::string::npos);
}

TEST_CASE("doctor --json prints JSON when a variable holds bytes that are not UTF-8",
          "[cli][utf8]") {
  test::TempDir tmp;
  const fs::path out = tmp.path() / "doctor.json";
  auto r = test::run_command("CUDA_LAUNCH_BLOCKING=\"$(printf '1\\377')\" '" +
                             std::string(ORCH_BINARY) + "' doctor --json > " + q(out));
  INFO(r.output);
  CHECK_THAT(r.output, !Contains("type_error"));
  CHECK_NOTHROW(nlohmann::json::parse(test::slurp(out)));
}

TEST_CASE("ingest escapes file names and sweep names from the results folder", "[cli][utf8]") {
  test::TempDir tmp;
  const fs::path docs = tmp.path() / "docs";
  fs::create_directories(docs);
  write(docs / "\x1b]0;TITLE\x07\x1b[31mbad\xe2\x80\xae.json", "{");
  write(docs / "good.json",
        test::result_doc("fast", "a1b2c3d4e5f60718", 0, "ok", 1000, "exp\x1b[32mGREEN\xe2\x80\xae")
            .dump());
  auto r = test::run_orch("--db " + q(tmp.path() / "i.db") + " ingest " + q(docs));
  INFO(r.output);
  CHECK(r.exit_code == 1);  // the malformed one
  CHECK_THAT(r.output, Contains("1 recorded") && Contains("1 malformed"));
  CHECK_THAT(r.output, Contains("\\x1b]0;TITLE\\x07\\x1b[31mbad\\u202e.json"));
  CHECK_THAT(r.output, Contains("exp\\x1b[32mGREEN\\u202e"));
  CHECK(r.output.find('\x1b') == std::string::npos);
  CHECK(r.output.find('\x07') == std::string::npos);
  CHECK(r.output.find("\xe2\x80\xae") == std::string::npos);
}

}  // namespace
}  // namespace orch
