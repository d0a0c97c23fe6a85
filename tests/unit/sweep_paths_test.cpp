// One database file, one lock per sweep; one sweep name, one lock file and one run folder:
// names that differ only in characters a file name cannot hold, and names that would climb out
// of `<db>.runs/`, are encoded, and every spelling of the database's path meets the same lock.
#include "sweep/sweep_paths.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "sweep/child_run.h"
#include "sweep/sweep_lock.h"

namespace orch::sweep {
namespace {

namespace fs = std::filesystem;

struct TempFolder {
  fs::path path = fs::temp_directory_path() / ("orch-paths-" + std::to_string(::getpid()));
  TempFolder() { fs::create_directories(path); }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST_CASE("sweep names: a/b and a_b get their own lock and run folder", "[sweep]") {
  const std::vector<std::string> names = {"a/b", "a_b", "a%2Fb", "a b", "a\\b", "a:b",
                                          ".",   "..",  "%2E.",  "_..", "a..b"};
  std::set<std::string> locks, folders;
  for (const auto& n : names) {
    locks.insert(lock_path("/data/r.db", n));
    folders.insert(sweep_work_dir("/data/r.db", n));
    INFO(n << " -> " << sweep_file_component(n));
    CHECK(sweep_file_component(n).find('/') == std::string::npos);
  }
  CHECK(locks.size() == names.size());
  CHECK(folders.size() == names.size());
  CHECK(sweep_file_component("resnet50-tuning_v2.1") == "resnet50-tuning_v2.1");  // unchanged
  CHECK(sweep_file_component("a/b") == "a%2Fb");
}

TEST_CASE("sweep names: '..' and '.' never leave DB.runs/", "[sweep]") {
  for (const std::string n : {"..", ".", "../..", "../x", "./.."}) {
    INFO(n);
    const fs::path dir = fs::path(sweep_work_dir("/data/r.db", n)).lexically_normal();
    CHECK(dir.parent_path() == fs::path("/data/r.db.runs"));
    const fs::path lock = fs::path(lock_path("/data/r.db", n)).lexically_normal();
    CHECK(lock.parent_path() == fs::path("/data"));
  }
}

TEST_CASE("sweep lock: a symlink or another spelling of the database meets the same lock",
          "[sweep]") {
  TempFolder tmp;
  fs::create_directories(tmp.path / "sub");
  const fs::path real = tmp.path / "r.db";
  fs::create_symlink(real, tmp.path / "link.db");
  const std::string by_real = lock_path(real.string(), "night");
  CHECK(lock_path((tmp.path / "link.db").string(), "night") == by_real);
  CHECK(lock_path((tmp.path / "sub" / ".." / "r.db").string(), "night") == by_real);
  CHECK(lock_path((tmp.path / "." / "r.db").string(), "night") == by_real);
  SweepLock held(lock_path((tmp.path / "link.db").string(), "night"));
  CHECK_THROWS_WITH(SweepLock(lock_path((tmp.path / "sub/../r.db").string(), "night")),
                    Catch::Contains("already running"));
}

}  // namespace
}  // namespace orch::sweep
