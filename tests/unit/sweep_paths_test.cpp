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

TEST_CASE("sweep names: long non-ASCII names are shortened by bytes, each its own", "[sweep]") {
  std::string night, other;
  for (int i = 0; i < 80; ++i) night += "\u591c";        // 80 x U+591C: 240 bytes, 720 encoded
  other = night.substr(0, night.size() - 3) + "\u65e5";  // the same but the last character
  const std::string a = sweep_file_component(night), b = sweep_file_component(other);
  INFO(a << "\n" << b);
  CHECK(a.size() <= kMaxSweepComponentBytes);
  CHECK(b.size() <= kMaxSweepComponentBytes);
  CHECK(a != b);
  CHECK(a.rfind("%E5%A4%9C", 0) == 0);  // still readable as the name's start
  CHECK(a.find('/') == std::string::npos);
  // Every '%' starts a whole escape: the cut never splits one.
  for (std::size_t p = a.find('%'); p != std::string::npos; p = a.find('%', p + 1)) {
    REQUIRE(p + 2 < a.find('~'));
  }
  CHECK(sweep_file_component(night) == a);  // stable
  // Names that fit are unchanged, so existing sweeps keep their locks and folders.
  const std::string fits(kMaxSweepComponentBytes, 'x');
  CHECK(sweep_file_component(fits) == fits);
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
