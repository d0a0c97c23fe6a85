// The checked writers every file of orch's goes through (sweep/environment_fault.h): never
// through a symbolic link planted where orch writes, never truncating or waiting on a FIFO or
// device that stands in a file's place, devices written in place rather than replaced, and no
// temporary file left when a write fails.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "sweep/environment_fault.h"
#include "sweep/file_tail.h"
#include "sweep/sweep_lock.h"

namespace fs = std::filesystem;
using Catch::Contains;
using orch::sweep::append_to_file;
using orch::sweep::EnvironmentFault;
using orch::sweep::file_tail;
using orch::sweep::write_file;
using orch::sweep::write_file_atomically;

namespace {

struct Folder {
  Folder() {
    std::random_device rd;
    path =
        fs::temp_directory_path() / ("orch-writer-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~Folder() { fs::remove_all(path); }
  fs::path path;
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("checked writer: a new file is created, an existing regular one replaced",
          "[sweep][writer]") {
  Folder f;
  const auto p = f.path / "spec.json";
  write_file(p.string(), "first, longer\n");
  write_file(p.string(), "second\n");
  CHECK(read(p) == "second\n");
  write_file_atomically(p.string(), "third\n");
  CHECK(read(p) == "third\n");
  // Nothing beside it: the temporary name was renamed away.
  CHECK(std::distance(fs::directory_iterator(f.path), fs::directory_iterator()) == 1);
}

TEST_CASE("checked writer: a symbolic link planted at the path is refused, its target untouched",
          "[sweep][writer]") {
  Folder f;
  const auto target = f.path / "precious.db";
  write_file(target.string(), "keep me");
  const auto link = f.path / "result.json";
  fs::create_symlink(target, link);
  CHECK_THROWS_WITH(write_file(link.string(), "x"), Contains("symbolic link"));
  CHECK_THROWS_WITH(write_file_atomically(link.string(), "x"), Contains("symbolic link"));
  CHECK(read(target) == "keep me");
  CHECK(fs::is_symlink(link));
  // A dangling link is not followed into creating its target either.
  const auto dangling = f.path / "dangling";
  fs::create_symlink(f.path / "created-through-link", dangling);
  CHECK_THROWS_AS(write_file(dangling.string(), "x"), EnvironmentFault);
  CHECK_FALSE(fs::exists(f.path / "created-through-link"));
}

TEST_CASE("checked writer: a FIFO or folder in a file's place is refused without waiting",
          "[sweep][writer]") {
  Folder f;
  const auto fifo = f.path / "stdout.log";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No reader: a blocking open would hang here for ever.
  CHECK_THROWS_WITH(write_file(fifo.string(), "x"), Contains(fifo.string()));
  const auto dir = f.path / "spec.json";
  fs::create_directories(dir);
  CHECK_THROWS_WITH(write_file(dir.string(), "x"), Contains("folder"));
  CHECK_THROWS_WITH(write_file_atomically(dir.string(), "x"), Contains("folder"));
}

TEST_CASE("checked writer: a device is written in place, never replaced", "[sweep][writer]") {
  if (!fs::exists("/dev/null") || !fs::exists("/dev/full")) {
    WARN("no /dev/null or /dev/full here: nothing checked");
    return;
  }
  write_file_atomically("/dev/null", "discarded\n");
  CHECK(fs::is_character_file("/dev/null"));
  // /dev/full: the write fails as on a full disk, and the device stays a device.
  CHECK_THROWS_WITH(write_file_atomically("/dev/full", "x"), Contains("ENOSPC"));
  CHECK(fs::is_character_file("/dev/full"));
}

TEST_CASE("checked writer: a write that fails leaves no temporary file", "[sweep][writer]") {
  Folder f;
  const auto out = f.path / "runs.csv";
  // A file-size limit of 4 bytes makes the temporary file's writes fail part-way (EFBIG), as a
  // disk that fills during the write does; SIGXFSZ is ignored so the failure is an errno.
  struct rlimit before {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGXFSZ, &ignore, &old);
  struct rlimit tiny = before;
  tiny.rlim_cur = 4;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &tiny) == 0);
  bool threw = false;
  try {
    write_file_atomically(out.string(), std::string(100, 'x'));
  } catch (const EnvironmentFault& e) {
    threw = std::string(e.what()).find("EFBIG") != std::string::npos;
  }
  ::setrlimit(RLIMIT_FSIZE, &before);
  ::sigaction(SIGXFSZ, &old, nullptr);
  CHECK(threw);
  CHECK_FALSE(fs::exists(out));
  CHECK(fs::is_empty(f.path));  // no runs.csv.tmp-PID left behind
}

TEST_CASE("sweep lock: a link or FIFO planted at the lock's name is refused, its target kept",
          "[sweep][writer]") {
  Folder f;
  const auto target = f.path / "precious.yaml";
  write_file(target.string(), "name: keep me\n");
  const auto lock = f.path / "r.db.night.lock";
  fs::create_symlink(target, lock);
  CHECK_THROWS_WITH(orch::sweep::SweepLock(lock.string()), Contains("symbolic link"));
  CHECK(read(target) == "name: keep me\n");
  fs::remove(lock);
  REQUIRE(::mkfifo(lock.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(orch::sweep::SweepLock(lock.string()), Contains("not a regular file"));
  fs::remove(lock);
  // The ordinary case still locks, and a second holder is told who holds it.
  orch::sweep::SweepLock held(lock.string());
  CHECK_THROWS_WITH(orch::sweep::SweepLock(lock.string()), Contains("already running"));
}

// A run's log after its process ended: the run's own program may have replaced it by a link or
// a FIFO, so the line orch adds is never written through a link nor waits on a FIFO, and the
// tail kept in the run's error is read from a regular file only.
TEST_CASE("append_to_file adds to a regular file and refuses what stands in one's place",
          "[sweep][writer]") {
  Folder dir;
  const fs::path log = dir.path / "stderr.log", victim = dir.path / "victim";
  std::ofstream(log) << "run said this\n";
  append_to_file(log.string(), "orch: ended 1 process\n");
  CHECK(read(log) == "run said this\norch: ended 1 process\n");

  std::ofstream(victim) << "keep me";
  const fs::path link = dir.path / "link.log";
  fs::create_symlink(victim, link);
  CHECK_THROWS_AS(append_to_file(link.string(), "x\n"), EnvironmentFault);
  CHECK_THROWS_WITH(append_to_file(link.string(), "x\n"),
                    Contains(link.string()) && Contains("symbolic link"));
  CHECK(read(victim) == "keep me");

  // A FIFO with no reader: refused at once, not waited on.
  const fs::path fifo = dir.path / "fifo.log";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(append_to_file(fifo.string(), "x\n"), Contains(fifo.string()));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));

  // A missing log is not created: the run made it, and one gone is not orch's to make again.
  const fs::path missing = dir.path / "gone.log";
  CHECK_THROWS_AS(append_to_file(missing.string(), "x\n"), EnvironmentFault);
  CHECK_FALSE(fs::exists(missing));
  CHECK_THROWS_WITH(append_to_file(dir.path.string(), "x\n"), Contains(dir.path.string()));
}

TEST_CASE("file_tail reads a regular file's end, never through a link or from a FIFO", "[sweep]") {
  Folder dir;
  const fs::path log = dir.path / "stderr.log";
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "line " + std::to_string(i) + "\n";
  std::ofstream(log) << text;
  const std::string tail = file_tail(log.string(), 100);
  CHECK(tail.size() <= 100);
  CHECK(tail.rfind("line ", 0) == 0);  // from a line's start
  CHECK(text.size() > tail.size());
  CHECK(text.compare(text.size() - tail.size(), tail.size(), tail) == 0);
  CHECK(file_tail(log.string()) == text.substr(text.size() - file_tail(log.string()).size()));

  const fs::path secret = dir.path / "secret", link = dir.path / "link.log";
  std::ofstream(secret) << "not the run's\n";
  fs::create_symlink(secret, link);
  CHECK(file_tail(link.string()).empty());

  const fs::path fifo = dir.path / "fifo.log";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK(file_tail(fifo.string()).empty());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(file_tail((dir.path / "missing").string()).empty());
}

TEST_CASE("checked writer: a hard link planted at the path is refused, the other name untouched",
          "[sweep][writer]") {
  Folder f;
  const auto victim = f.path / "victim", planted = f.path / "spec.json";
  std::ofstream(victim) << "keep me";
  fs::create_hard_link(victim, planted);
  CHECK_THROWS_WITH(write_file(planted.string(), "x"),
                    Contains(planted.string()) && Contains("hard link"));
  CHECK_THROWS_WITH(append_to_file(planted.string(), "x"), Contains("hard link"));
  CHECK(read(victim) == "keep me");
  // Replaced by renaming, the name is the new file's and the other name keeps its content.
  write_file_atomically(planted.string(), "new");
  CHECK(read(planted) == "new");
  CHECK(read(victim) == "keep me");
}

TEST_CASE("checked writer: a FIFO with no reader is refused at once where it is written in place",
          "[sweep][writer]") {
  Folder f;
  const auto fifo = f.path / "index.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(write_file_atomically(fifo.string(), "x"),
                    Contains(fifo.string()) && Contains("FIFO with no reader"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(fs::is_fifo(fifo));
}
