// read_file on what a shared dataset folder may hold besides images: a huge sparse file named
// x.JPEG is refused from its first bytes, its memory never taken; a huge file that starts as a
// JPEG is refused by its size; a FIFO is refused, never waited on; an image reads whole.
#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/image_folder.h>
#include <orch/imagedata/image_generator.h>
#include <orch/imagedata/jpeg_codec.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>

#include "unit/dataset_test_support.h"

using namespace orch::imagedata;
using orch::imagedata::test::ScratchDir;
namespace fs = std::filesystem;

namespace {

// The process's peak resident memory so far, in MiB (ru_maxrss is in KiB on Linux).
long peak_rss_mib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// A file of `bytes` that takes no disk: `head` then a hole.
void sparse_file(const fs::path& p, const std::vector<std::uint8_t>& head, std::uint64_t bytes) {
  {
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(head.data()),
              static_cast<std::streamsize>(head.size()));
  }
  REQUIRE(::truncate(p.c_str(), static_cast<off_t>(bytes)) == 0);
}

DatasetError error_of(const fs::path& p) {
  try {
    read_file(p);
  } catch (const DatasetError& e) {
    return e;
  }
  FAIL("read_file(" << p << ") did not throw");
  return DatasetError(kReasonOther, "");
}

}  // namespace

TEST_CASE("read_file refuses a huge non-image from its head and a huge JPEG by its size, unread",
          "[dataset]") {
  ScratchDir d;
  const fs::path zeros = d.path() / "zeros.JPEG", big = d.path() / "big.JPEG";
  sparse_file(zeros, {}, std::uint64_t{2} << 30);  // 2 GiB of zeros
  sparse_file(big, {0xFF, 0xD8, 0xFF, 0xE0}, kMaxImageFileBytes + 1);
  const long before = peak_rss_mib();
  const DatasetError none = error_of(zeros);
  CHECK(none.reason() == std::string(kReasonNotAnImage));
  CHECK_THAT(none.what(), Catch::StartsWith(zeros.string() + ": not an image"));
  const DatasetError large = error_of(big);
  CHECK(large.reason() == std::string(kReasonUnsupported));
  CHECK_THAT(large.what(), Catch::StartsWith(big.string() + ": 268435457 bytes") &&
                               Catch::Contains("larger than the 256 MiB"));
  // Reading either whole would have raised the peak by 256 MiB or more.
  CHECK(peak_rss_mib() - before < 64);
}

TEST_CASE("read_file refuses a FIFO at once and reads an image whole", "[dataset]") {
  ScratchDir d;
  const fs::path fifo = d.path() / "fifo.JPEG", image = d.path() / "a.JPEG";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // a plain open would wait for a writer
  const auto start = std::chrono::steady_clock::now();
  const DatasetError e = error_of(fifo);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(e.reason() == std::string(kReasonUnreadable));
  CHECK_THAT(e.what(), Catch::Contains(fifo.string() + ": not a regular file"));

  const auto jpeg = encode_jpeg(render_image(1, 0, 0), 80);
  test::spit(image, jpeg);
  CHECK(read_file(image) == jpeg);
  test::spit(d.path() / "empty.JPEG", std::vector<std::uint8_t>{});
  CHECK(error_of(d.path() / "empty.JPEG").reason() == std::string(kReasonEmpty));
}

TEST_CASE("scan_image_folder says a FIFO named like an image, or skips it when asked",
          "[dataset]") {
  ScratchDir d;
  fs::create_directories(d.path() / "n01");
  test::spit(d.path() / "n01" / "a.JPEG", encode_jpeg(render_image(1, 0, 0), 80));
  const fs::path fifo = d.path() / "n01" / "b.JPEG";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(scan_image_folder(d.path()),
                    Catch::Contains(fifo.string() + ": not a regular file"));
  ScanOptions skip;
  skip.skip_errors = true;
  const FolderIndex idx = scan_image_folder(d.path(), skip);
  CHECK(idx.samples.size() == 1);
  REQUIRE(idx.skipped.size() == 1);
  CHECK(idx.skipped[0].reason == kReasonUnreadable);
}
