// The image cache: round trip against an independent decode, and refusal of foreign, newer and
// truncated files.
#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/image_cache.h>
#include <orch/imagedata/image_folder.h>
#include <orch/imagedata/image_generator.h>
#include <orch/imagedata/jpeg_codec.h>
#include <orch/imagedata/resample.h>

#include <catch2/catch.hpp>

#include "unit/dataset_test_support.h"

using namespace orch::imagedata;
namespace fs = std::filesystem;

TEST_CASE("image cache: round trip of labels, classes and pixels", "[dataset]") {
  test::ScratchDir d;
  GeneratorOptions o;
  o.classes = 3;
  o.per_class = 2;
  o.seed = 4;
  make_dataset(d.path() / "data", o);
  const auto summary = write_image_cache(d.path() / "data", d.path() / "c.bin", 40, 2);
  CHECK(summary.images == 6);
  CHECK(fs::file_size(d.path() / "c.bin") == summary.file_bytes);
  CHECK_FALSE(fs::exists(d.path() / "c.bin.partial"));
  const ImageCache cache(d.path() / "c.bin");
  const FolderIndex idx = scan_image_folder(d.path() / "data");
  REQUIRE(cache.size() == 6);
  CHECK(cache.image_size() == 40);
  CHECK(cache.classes() == idx.classes);
  for (std::int64_t i = 0; i < 6; ++i) {
    const auto& s = idx.samples[static_cast<std::size_t>(i)];
    CHECK(cache.label(i) == s.label);
    // Independently: full decode, centre square, area-averaged down.
    const auto bytes = read_file(s.path);
    const RgbImage full = decode_jpeg(bytes.data(), bytes.size());
    const CropBox sq = center_square(full.width, full.height);
    const std::vector<std::uint8_t> ref = test::area_resize(full, sq, 40);
    const double diff = test::mean_abs_diff(cache.pixels(i), ref.data(), ref.size());
    INFO("image " << i << " mean abs diff " << diff);
    CHECK(diff < 12);
    if (i > 0) CHECK(test::mean_abs_diff(cache.pixels(i), cache.pixels(i - 1), ref.size()) > diff);
  }
}

TEST_CASE("image cache: other magics, versions and truncated files are refused", "[dataset]") {
  test::ScratchDir d;
  GeneratorOptions o;
  o.classes = 2;
  o.per_class = 1;
  make_dataset(d.path() / "data", o);
  write_image_cache(d.path() / "data", d.path() / "c.bin", 16, 1);
  const auto good = test::slurp(d.path() / "c.bin");
  REQUIRE_NOTHROW(ImageCache(d.path() / "c.bin"));

  auto bad = good;
  bad[0] = 'X';
  test::spit(d.path() / "magic.bin", bad);
  CHECK_THROWS_WITH(ImageCache(d.path() / "magic.bin"), Catch::Contains("not an orch image cache"));

  bad = good;
  bad[8] = 2;  // version 2
  test::spit(d.path() / "v2.bin", bad);
  CHECK_THROWS_WITH(ImageCache(d.path() / "v2.bin"),
                    Catch::Contains("version 2 is not supported") && Catch::Contains("version 1"));

  test::spit(d.path() / "short.bin", std::vector<std::uint8_t>(good.begin(), good.end() - 10));
  CHECK_THROWS_WITH(ImageCache(d.path() / "short.bin"), Catch::Contains("truncated"));
  test::spit(d.path() / "tiny.bin", std::vector<std::uint8_t>(good.begin(), good.begin() + 12));
  CHECK_THROWS_WITH(ImageCache(d.path() / "tiny.bin"), Catch::Contains("too short"));
  CHECK_THROWS_WITH(ImageCache(d.path() / "absent.bin"), Catch::Contains("cannot open"));
}

TEST_CASE("image cache: a corrupt JPEG fails the cache naming the file", "[dataset]") {
  test::ScratchDir d;
  GeneratorOptions o;
  o.classes = 2;
  o.per_class = 2;
  make_dataset(d.path() / "data", o);
  const FolderIndex idx = scan_image_folder(d.path() / "data");
  const auto& victim = idx.samples[3].path;
  auto bytes = test::slurp(victim);
  bytes.resize(bytes.size() / 2);
  test::spit(victim, bytes);
  CHECK_THROWS_WITH(write_image_cache(d.path() / "data", d.path() / "c.bin", 16, 2),
                    Catch::Contains(victim.filename().string()));
  CHECK_FALSE(fs::exists(d.path() / "c.bin"));
  CHECK_FALSE(fs::exists(d.path() / "c.bin.partial"));
}
