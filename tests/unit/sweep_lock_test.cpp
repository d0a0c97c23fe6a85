// The sweep lock's file: there while a sweep holds it, gone when the sweep ends, and still a
// lock for whoever comes next; a holder never removes a file that is not its own.
#include "sweep/sweep_lock.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

namespace orch::sweep {
namespace {

namespace fs = std::filesystem;

struct LockDir {
  LockDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("orch-sweep-lock-" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~LockDir() { fs::remove_all(path); }
  fs::path path;
};

TEST_CASE("sweep lock: the file goes when the sweep ends, and the lock still holds after",
          "[sweep][lock]") {
  LockDir dir;
  const std::string path = lock_path((dir.path / "r.db").string(), "night");
  {
    SweepLock first(path);
    REQUIRE(fs::exists(path));
    std::ifstream in(path);
    std::string holder;
    std::getline(in, holder);
    CHECK(holder.rfind("pid " + std::to_string(::getpid()) + " on ", 0) == 0);
  }
  CHECK_FALSE(fs::exists(path));

  // The next sweep makes the file again and excludes a third as before.
  {
    SweepLock second(path);
    CHECK(fs::exists(path));
    CHECK_THROWS_WITH(SweepLock(path), Catch::Contains("already running"));
  }
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("sweep lock: a file left by a killed sweep is taken, then removed", "[sweep][lock]") {
  LockDir dir;
  const std::string path = lock_path((dir.path / "r.db").string(), "night");
  std::ofstream(path) << "pid 1 on elsewhere\n";  // unlocked: its holder died
  {
    SweepLock lock(path);
    std::ifstream in(path);
    std::string holder;
    std::getline(in, holder);
    CHECK(holder.rfind("pid " + std::to_string(::getpid()), 0) == 0);
  }
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("sweep lock: a holder leaves a file put in its place alone", "[sweep][lock]") {
  LockDir dir;
  const std::string path = lock_path((dir.path / "r.db").string(), "night");
  {
    SweepLock lock(path);
    fs::remove(path);
    std::ofstream(path) << "someone else's\n";
  }
  REQUIRE(fs::exists(path));
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  CHECK(text == "someone else's");
}

}  // namespace
}  // namespace orch::sweep
