// Folder scanning and class mapping, the generator's layout, determinism and size statistics.
#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/image_folder.h>
#include <orch/imagedata/image_generator.h>
#include <orch/imagedata/jpeg_codec.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "unit/dataset_test_support.h"

using namespace orch::imagedata;
using orch::imagedata::test::ScratchDir;
namespace fs = std::filesystem;

TEST_CASE("scan_image_folder: sorted classes give labels, non-JPEG files are ignored",
          "[dataset]") {
  ScratchDir d;
  const auto jpeg = encode_jpeg(render_image(1, 0, 0), 80);
  for (const char* cls : {"n0300", "n0100", "n0200"}) {
    fs::create_directories(d.path() / "train" / cls);
    for (const char* f : {"b.JPEG", "a.jpg", "c.Jpeg"})
      test::spit(d.path() / "train" / cls / f, jpeg);
    test::spit(d.path() / "train" / cls / "notes.txt", {'x'});
  }
  const FolderIndex idx = scan_image_folder(d.path());
  CHECK(idx.dir == d.path() / "train");
  REQUIRE(idx.classes == std::vector<std::string>{"n0100", "n0200", "n0300"});
  REQUIRE(idx.samples.size() == 9);
  for (std::size_t i = 0; i < idx.samples.size(); ++i) {
    const auto& s = idx.samples[i];
    CHECK(s.label == static_cast<int>(i / 3));
    CHECK(s.path.parent_path().filename().string() ==
          idx.classes[static_cast<std::size_t>(s.label)]);
  }
  CHECK(idx.samples[0].path.filename() == "a.jpg");
  CHECK(idx.samples[1].path.filename() == "b.JPEG");
  // The class folders may also sit directly in the root.
  const FolderIndex direct = scan_image_folder(d.path() / "train");
  CHECK(direct.samples.size() == 9);
}

TEST_CASE("scan_image_folder: missing folder, no classes, empty class are clear errors",
          "[dataset]") {
  ScratchDir d;
  CHECK_THROWS_WITH(scan_image_folder(d.path() / "nope"),
                    Catch::Contains("nope") && Catch::Contains("no such folder"));
  CHECK_THROWS_WITH(scan_image_folder(d.path()), Catch::Contains("no class folders"));
  fs::create_directories(d.path() / "n01");
  test::spit(d.path() / "n01" / "x.JPEG", encode_jpeg(render_image(1, 0, 0), 80));
  fs::create_directories(d.path() / "n02");
  test::spit(d.path() / "n02" / "readme.txt", {'x'});
  CHECK_THROWS_WITH(scan_image_folder(d.path()),
                    Catch::Contains("n02") && Catch::Contains("no .JPEG"));
}

TEST_CASE("read_file: an unreadable file names its path", "[dataset]") {
  ScratchDir d;
  CHECK_THROWS_WITH(read_file(d.path() / "missing.JPEG"),
                    Catch::Contains("missing.JPEG") && Catch::Contains("cannot open"));
}

TEST_CASE("make_dataset: ImageNet layout, byte-identical for a seed whatever the threads",
          "[dataset]") {
  ScratchDir a, b, c;
  GeneratorOptions o;
  o.classes = 3;
  o.per_class = 2;
  o.seed = 7;
  o.workers = 1;
  const auto sa = make_dataset(a.path(), o);
  o.workers = 3;
  make_dataset(b.path(), o);
  o.seed = 8;
  make_dataset(c.path(), o);
  CHECK(sa.files == 6);
  const FolderIndex ia = scan_image_folder(a.path()), ib = scan_image_folder(b.path()),
                    ic = scan_image_folder(c.path());
  REQUIRE(ia.samples.size() == 6);
  REQUIRE(ia.classes.size() == 3);
  CHECK(std::is_sorted(ia.classes.begin(), ia.classes.end()));
  CHECK(ia.classes[0] == class_folder_name(0));
  CHECK(ia.classes[0].size() == 9);  // n + 8 digits, like n01440764
  int differing = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(ia.samples[i].path.filename() == ib.samples[i].path.filename());
    CHECK(test::slurp(ia.samples[i].path) == test::slurp(ib.samples[i].path));
    if (test::slurp(ia.samples[i].path) != test::slurp(ic.samples[i].path)) ++differing;
  }
  CHECK(differing == 6);
  // Nothing is overwritten.
  CHECK_THROWS_WITH(make_dataset(a.path(), o), Catch::Contains("not empty"));
}

TEST_CASE("generated images: ImageNet-like dimensions and JPEG sizes", "[dataset]") {
  const int n = 24;
  double bytes = 0, width = 0, height = 0;
  std::set<std::pair<int, int>> shapes;
  int portrait = 0;
  for (int i = 0; i < n; ++i) {
    const RgbImage img = render_image(3, i % 4, i);
    const auto s = generated_size(3, i % 4, i);
    CHECK(img.width == s.width);
    CHECK(img.height == s.height);
    CHECK(std::max(img.width, img.height) <= 640);
    CHECK(std::min(img.width, img.height) >= 112);
    shapes.insert({img.width, img.height});
    portrait += img.height > img.width;
    width += std::max(img.width, img.height);
    height += std::min(img.width, img.height);
    const auto jpeg = encode_jpeg(img, 90);
    bytes += static_cast<double>(jpeg.size());
    // Decodes back to the same dimensions.
    const auto size = read_jpeg_size(jpeg.data(), jpeg.size());
    CHECK(size.width == img.width);
  }
  const double mean_kb = bytes / n / 1000.0;
  INFO("mean file size " << mean_kb << " KB");
  CHECK(mean_kb > 70);  // ImageNet's training JPEGs average ~110 KB
  CHECK(mean_kb < 160);
  CHECK(width / n == Approx(500).margin(60));
  CHECK(height / n == Approx(360).margin(50));
  CHECK(shapes.size() > 3);  // sizes vary
  CHECK(portrait > 0);
  CHECK(portrait < n / 2);
}
