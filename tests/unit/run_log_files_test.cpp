// A run's log after its process ended (sweep/environment_fault.h append_to_file,
// sweep/file_tail.h): the run's own program may have replaced the log by a link or a FIFO, so
// the line orch adds is never written through a link nor waits on a FIFO, and the tail kept in
// the run's error is read from a regular file only.
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

namespace fs = std::filesystem;
using Catch::Contains;
using orch::sweep::append_to_file;
using orch::sweep::EnvironmentFault;
using orch::sweep::file_tail;

namespace {

struct Folder {
  Folder() {
    std::random_device rd;
    path =
        fs::temp_directory_path() / ("orch-runlog-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~Folder() { fs::remove_all(path); }
  fs::path path;
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

}  // namespace

TEST_CASE("append_to_file adds to a regular file and refuses what stands in one's place",
          "[sweep][writer]") {
  Folder dir;
  const fs::path log = dir.path / "stderr.log", victim = dir.path / "victim";
  write(log, "run said this\n");
  append_to_file(log.string(), "orch: ended 1 process\n");
  CHECK(read(log) == "run said this\norch: ended 1 process\n");

  write(victim, "keep me");
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
  write(log, text);
  const std::string tail = file_tail(log.string(), 100);
  CHECK(tail.size() <= 100);
  CHECK(tail.rfind("line ", 0) == 0);  // from a line's start
  CHECK(text.size() > tail.size());
  CHECK(text.compare(text.size() - tail.size(), tail.size(), tail) == 0);
  CHECK(file_tail(log.string()) == text.substr(text.size() - file_tail(log.string()).size()));

  const fs::path secret = dir.path / "secret", link = dir.path / "link.log";
  write(secret, "not the run's\n");
  fs::create_symlink(secret, link);
  CHECK(file_tail(link.string()).empty());

  const fs::path fifo = dir.path / "fifo.log";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK(file_tail(fifo.string()).empty());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(file_tail((dir.path / "missing").string()).empty());
}
