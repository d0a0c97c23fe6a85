// One measurement per device (sweep/device_lock.h): a device held by one holder is refused to a
// second (naming the holder) or waited for; the lock folder and files refuse what a neighbour
// could plant; a database reached through a hard link meets its sweep's lock.
#include "sweep/device_lock.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "sweep/sweep_lock.h"

namespace orch::sweep {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// A lock folder of this test's own, as ORCH_LOCK_DIR, restored afterwards.
struct LockFolder {
  fs::path path = fs::temp_directory_path() / ("orch-devlock-" + std::to_string(::getpid()));
  std::string previous;
  LockFolder() {
    fs::remove_all(path);
    if (const char* v = std::getenv("ORCH_LOCK_DIR")) previous = v;
    ::setenv("ORCH_LOCK_DIR", path.c_str(), 1);
  }
  ~LockFolder() {
    ::setenv("ORCH_LOCK_DIR", previous.c_str(), 1);
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const std::vector<LockedDevice> kGpu0 = {{"gpu-GPU-aaaa", "GPU 0 (GPU-aaaa)"}};

std::optional<DeviceLocks> take(const std::vector<LockedDevice>& d, const std::string& who,
                                bool wait, std::ostream& out, const std::atomic<bool>& stop) {
  return DeviceLocks::acquire(d, who, wait, out, stop, /*poll_s=*/0.05);
}

TEST_CASE("device locks: a held device is refused under --no-wait, naming its holder",
          "[device_lock]") {
  LockFolder folder;
  std::atomic<bool> stop{false};
  std::ostringstream out;
  auto first = take(kGpu0, "orch sweep 'night' (pid 1)", false, out, stop);
  REQUIRE(first);
  CHECK(first->keys() == std::vector<std::string>{"gpu-GPU-aaaa"});
  CHECK(fs::status(folder.path).permissions() == (fs::perms::all | fs::perms::sticky_bit));
  // Another open of the same file is another holder, as another process would be.
  try {
    take(kGpu0, "orch sweep 'other'", false, out, stop);
    FAIL("the second holder took a held device");
  } catch (const DeviceBusy& e) {
    CHECK_THAT(e.what(), Contains("GPU 0 (GPU-aaaa) is in use by orch sweep 'night' (pid 1)"));
  }
  // A different device is free; releasing the first frees it for the next.
  CHECK(take({{"gpu-GPU-bbbb", "GPU 1"}}, "x", false, out, stop));
  first.reset();
  CHECK(take(kGpu0, "orch sweep 'other'", false, out, stop));
}

TEST_CASE("device locks: a waiter says once whom it waits for, and starts when the device is free",
          "[device_lock]") {
  LockFolder folder;
  std::atomic<bool> stop{false};
  std::ostringstream out_a, out_b;
  auto held = take(kGpu0, "orch run 'a' (pid 7)", false, out_a, stop);
  REQUIRE(held);
  std::optional<DeviceLocks> second;
  // `second` is the waiter's until join(); the main thread watches this flag instead, which
  // ThreadSanitizer would otherwise (rightly) report as a read racing the waiter's write.
  std::atomic<bool> taken{false};
  std::thread waiter([&] {
    second = take(kGpu0, "orch sweep 'b'", true, out_b, stop);
    taken = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  CHECK_FALSE(taken.load());
  held.reset();
  waiter.join();
  REQUIRE(second.has_value());
  const std::string said = out_b.str();
  CHECK_THAT(said, Contains("waiting for GPU 0 (GPU-aaaa): in use by orch run 'a' (pid 7)"));
  CHECK(said.find("waiting for") == said.rfind("waiting for"));  // once, not every poll
  CHECK_THAT(said, Contains("is free: starting"));
  // The new holder's text replaced the old one's.
  std::ostringstream out_c;
  try {
    take(kGpu0, "c", false, out_c, stop);
    FAIL("taken twice");
  } catch (const DeviceBusy& e) {
    CHECK_THAT(e.what(), Contains("in use by orch sweep 'b'"));
  }
}

TEST_CASE("device locks: a stop while waiting holds nothing", "[device_lock]") {
  LockFolder folder;
  std::atomic<bool> stop{false};
  std::ostringstream out;
  auto held = take({{"cpu", "the CPU"}}, "first", false, out, stop);
  REQUIRE(held);
  std::optional<DeviceLocks> second = DeviceLocks{};
  std::thread waiter([&] {
    second = take({{"a-free-one", "free"}, {"cpu", "the CPU"}}, "second", true, out, stop);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stop = true;
  waiter.join();
  CHECK_FALSE(second.has_value());
  // The free device it had taken on the way was let go with the rest.
  stop = false;
  CHECK(take({{"a-free-one", "free"}}, "third", false, out, stop));
}

TEST_CASE("device locks: a planted link, a FIFO, an unsafe folder are refused", "[device_lock]") {
  LockFolder folder;
  std::atomic<bool> stop{false};
  std::ostringstream out;
  fs::create_directories(folder.path);
  fs::permissions(folder.path, fs::perms::owner_all);
  const fs::path target = folder.path / "target";
  std::ofstream(target) << "keep me";
  fs::create_symlink(target, folder.path / device_lock_file_name("gpu-linked"));
  CHECK_THROWS_WITH(take({{"gpu-linked", "GPU"}}, "me", false, out, stop),
                    Contains("symbolic link"));
  std::ifstream in(target);
  std::string kept((std::istreambuf_iterator<char>(in)), {});
  CHECK(kept == "keep me");
  REQUIRE(::mkfifo((folder.path / device_lock_file_name("gpu-fifo")).c_str(), 0600) == 0);
  CHECK_THROWS_WITH(take({{"gpu-fifo", "GPU"}}, "me", false, out, stop),
                    Contains("not a regular file"));
  // Writable by others without the sticky bit: anyone could swap a lock under its holder.
  fs::permissions(folder.path, fs::perms::all);
  CHECK_THROWS_WITH(device_lock_dir(), Contains("not sticky"));
  fs::permissions(folder.path, fs::perms::all | fs::perms::sticky_bit);
  CHECK_NOTHROW(device_lock_dir());
  // The folder itself a link.
  const fs::path real = folder.path.string() + "-real";
  fs::create_directories(real);
  fs::remove_all(folder.path);
  fs::create_directory_symlink(real, folder.path);
  CHECK_THROWS_WITH(device_lock_dir(), Contains("symbolic link"));
  fs::remove(folder.path);
  fs::remove_all(real);
}

TEST_CASE("device lock file names hold only safe characters", "[device_lock]") {
  CHECK(device_lock_file_name("gpu-GPU-8a1f") == "orch-gpu-GPU-8a1f.lock");
  CHECK(device_lock_file_name("../x/y") == "orch-.._x_y.lock");
  CHECK(device_lock_file_name("") == "orch-.lock");
}

TEST_CASE("the sweep lock: a hard link to the database meets the same sweep's lock",
          "[device_lock][sweep]") {
  LockFolder folder;
  const fs::path dir = fs::temp_directory_path() / ("orch-hardlink-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path db = dir / "r.db", linked = dir / "other-name.db";
  std::ofstream(db) << "";
  fs::create_hard_link(db, linked);
  SweepLock first(lock_path(db.string(), "night"));
  first.hold_database(db.string(), "night");
  // The lock beside the path differs (another name), so the file's own lock must catch it.
  SweepLock second(lock_path(linked.string(), "night"));
  CHECK_THROWS_WITH(
      second.hold_database(linked.string(), "night"),
      Contains("already running on the same database file") && Contains("orch sweep 'night'"));
  // Another sweep of the same file is not this one.
  SweepLock third(lock_path(linked.string(), "day"));
  CHECK_NOTHROW(third.hold_database(linked.string(), "day"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::sweep

namespace orch::sweep {
namespace {

TEST_CASE("the sweep lock: a hard link meets the same sweep's lock under another ORCH_LOCK_DIR",
          "[device_lock][sweep]") {
  // Two sweeps, each with a lock folder of its own: only the database file's own lock can
  // see that they are one sweep of one file (issue 39 probe #8).
  const fs::path dir = fs::temp_directory_path() / ("orch-hardlink2-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path db = dir / "r.db", linked = dir / "sub" / "other-name.db";
  fs::create_directories(linked.parent_path());
  std::ofstream(db) << "";
  fs::create_hard_link(db, linked);
  std::optional<SweepLock> first;
  {
    LockFolder folder;
    first.emplace(lock_path(db.string(), "night"));
    first->hold_database(db.string(), "night");
  }
  {
    LockFolder other;  // another ORCH_LOCK_DIR (a fresh folder)
    SweepLock second(lock_path(linked.string(), "night"));
    CHECK_THROWS_WITH(
        second.hold_database(linked.string(), "night"),
        Contains("already running on the same database file") && Contains("another ORCH_LOCK_DIR"));
    SweepLock day(lock_path(linked.string(), "day"));  // another sweep of the file
    CHECK_NOTHROW(day.hold_database(linked.string(), "day"));
  }
  first.reset();  // released: the same sweep may run again, through either path
  {
    LockFolder other;
    SweepLock again(lock_path(linked.string(), "night"));
    CHECK_NOTHROW(again.hold_database(linked.string(), "night"));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::sweep
