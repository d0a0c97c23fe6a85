// read_bounded_file: what orch reads of a file it did not necessarily write (a run's
// specification, a result document, a script's report): a regular file within its limit is
// read whole; anything else at the path is refused at once, named, without blocking or reading
// past the limit.
#include "plan/bounded_file.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace orch;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
namespace fs = std::filesystem;

namespace {

struct Tmp {
  fs::path dir;
  Tmp() {
    std::string templ = (fs::temp_directory_path() / "orch-bounded-XXXXXX").string();
    dir = ::mkdtemp(templ.data());
  }
  ~Tmp() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::string refusal(const std::string& path, std::size_t max_bytes) {
  try {
    read_bounded_file(path, max_bytes, "a result document");
  } catch (const BoundedReadError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("read_bounded_file reads a regular file within its limit, through a link",
          "[bounded_file]") {
  Tmp t;
  const auto p = t.dir / "doc.json";
  std::ofstream(p) << "{\"status\": \"ok\"}";
  CHECK(read_bounded_file(p.string(), 1 << 20, "a result document") == "{\"status\": \"ok\"}");
  fs::create_symlink(p, t.dir / "link.json");
  CHECK(read_bounded_file((t.dir / "link.json").string(), 16, "x") == "{\"status\": \"ok\"}");
  CHECK(refusal(p.string(), 16).empty());  // exactly 16 bytes: within
}

TEST_CASE("read_bounded_file refuses a larger file, naming the limit", "[bounded_file]") {
  Tmp t;
  const auto p = t.dir / "big.json";
  std::ofstream(p) << std::string(100, 'x');
  const auto why = refusal(p.string(), 99);
  CHECK_THAT(why, StartsWith(p.string() + ": "));
  CHECK_THAT(why, Contains("larger than 99 bytes, the limit for a result document"));
}

TEST_CASE("read_bounded_file refuses a FIFO at once, a device and a folder, saying which",
          "[bounded_file]") {
  Tmp t;
  const auto fifo = t.dir / "doc.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THAT(refusal(fifo.string(), 1 << 20),
             Contains("it is a FIFO (named pipe), not a regular file; a result document is a "
                      "regular file"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  CHECK_THAT(refusal("/dev/zero", 1 << 20), Contains("/dev/zero: it is a character device"));
  CHECK_THAT(refusal(t.dir.string(), 1 << 20), Contains("it is a folder"));
  CHECK_THAT(refusal((t.dir / "absent").string(), 1 << 20),
             Contains("cannot read it: No such file or directory"));
}
