// Datasets of real size: symbolic-link loops in a folder, the ImageNet splits, the cache's
// subsets, skips and crash-safe writing, and the progress display of the long dataset jobs.
#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/image_cache.h>
#include <orch/imagedata/image_folder.h>
#include <orch/imagedata/image_generator.h>
#include <orch/imagedata/progress_meter.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <sstream>
#include <thread>

#include "unit/dataset_test_support.h"

using namespace orch::imagedata;
namespace fs = std::filesystem;

namespace {

// DIR/train/<class>/ with `classes` x `per_class` small JPEGs.
fs::path small_folder(const fs::path& dir, int classes, int per_class) {
  GeneratorOptions o;
  o.classes = classes;
  o.per_class = per_class;
  o.workers = 2;
  make_dataset(dir, o);
  return dir;
}

}  // namespace

TEST_CASE("scan_image_folder: a symbolic-link loop is named, and skipped under skip", "[dataset]") {
  test::ScratchDir d;
  const fs::path root = small_folder(d.path() / "data", 2, 2);
  const fs::path train = root / "train";
  const std::string first_class = class_folder_name(0);
  // A file-named loop inside a class and a class-level loop (a -> b -> a).
  fs::create_symlink("loop.JPEG", train / first_class / "loop.JPEG");
  fs::create_symlink("zz_b", train / "zz_a");
  fs::create_symlink("zz_a", train / "zz_b");

  try {
    scan_image_folder(root);
    FAIL("a loop must fail the scan without skip");
  } catch (const DatasetError& e) {
    CHECK(e.reason() == kReasonSymlinkLoop);
    CHECK_THAT(e.what(), Catch::Contains("loop of symbolic links"));
    CHECK_THAT(e.what(), Catch::Contains(train.string()));
    CHECK_THAT(e.what(), !Catch::Contains("filesystem error"));
  }
  ScanOptions skip;
  skip.skip_errors = true;
  const FolderIndex idx = scan_image_folder(root, skip);
  CHECK(idx.classes.size() == 2);
  CHECK(idx.samples.size() == 4);
  REQUIRE(idx.skipped.size() == 3);
  for (const auto& s : idx.skipped) {
    CHECK(s.reason == kReasonSymlinkLoop);
    CHECK_THAT(s.message, Catch::Contains(s.path.string()));
  }
  CHECK(idx.skipped_by_reason() == std::map<std::string, std::int64_t>{{kReasonSymlinkLoop, 3}});
  // Reading the loop itself names it too.
  try {
    read_file(train / first_class / "loop.JPEG");
    FAIL("reading a loop must fail");
  } catch (const DatasetError& e) {
    CHECK(e.reason() == kReasonSymlinkLoop);
    CHECK_THAT(e.what(), Catch::Contains("loop.JPEG"));
  }
}

TEST_CASE("scan_image_folder: split train and val of the ImageNet layout", "[dataset]") {
  test::ScratchDir d;
  const fs::path root = small_folder(d.path() / "data", 3, 2);
  ScanOptions val;
  val.split = "val";
  CHECK_THROWS_WITH(scan_image_folder(root, val),
                    Catch::Contains("val") && Catch::Contains("no such folder"));
  // A flat val/ (ImageNet's as downloaded) is explained, not called empty.
  fs::create_directories(root / "val");
  const auto jpeg = test::slurp(scan_image_folder(root).samples[0].path);
  test::spit(root / "val" / "ILSVRC2012_val_00000001.JPEG", jpeg);
  CHECK_THROWS_WITH(scan_image_folder(root, val), Catch::Contains("sorted into DIR/val/<class>/"));
  fs::remove(root / "val" / "ILSVRC2012_val_00000001.JPEG");
  for (const char* cls : {"n2", "n1"}) {
    fs::create_directories(root / "val" / cls);
    test::spit(root / "val" / cls / "v.JPEG", jpeg);
  }
  const FolderIndex v = scan_image_folder(root, val);
  CHECK(v.dir == root / "val");
  CHECK(v.classes == std::vector<std::string>{"n1", "n2"});
  CHECK(v.samples.size() == 2);
  ScanOptions train;
  train.split = "train";
  CHECK(scan_image_folder(root, train).samples.size() == 6);
  ScanOptions bad;
  bad.split = "test";
  CHECK_THROWS_WITH(scan_image_folder(root, bad), Catch::Contains("train or val"));
}

TEST_CASE("apply_subset: classes, per class and fraction, the same every time", "[dataset]") {
  FolderIndex idx;
  for (int c = 0; c < 4; ++c) {
    idx.classes.push_back("c" + std::to_string(c));
    for (int i = 0; i < 10; ++i)
      idx.samples.push_back({fs::path("c" + std::to_string(c)) / ("f" + std::to_string(i)), c});
  }
  FolderIndex a = idx;
  apply_subset(a, {2, 3, 0});
  CHECK(a.classes == std::vector<std::string>{"c0", "c1"});
  REQUIRE(a.samples.size() == 6);
  for (std::size_t i = 0; i < a.samples.size(); ++i) CHECK(a.samples[i].label == int(i / 3));
  CHECK(std::is_sorted(a.samples.begin(), a.samples.begin() + 3,
                       [](const auto& x, const auto& y) { return x.path < y.path; }));
  FolderIndex b = idx;
  apply_subset(b, {2, 3, 0});
  for (std::size_t i = 0; i < a.samples.size(); ++i) CHECK(a.samples[i].path == b.samples[i].path);
  // A spread sample, not the alphabetically first three.
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i)
    names.push_back(a.samples[static_cast<std::size_t>(i)].path.filename());
  CHECK(names != std::vector<std::string>{"f0", "f1", "f2"});
  FolderIndex f = idx;
  apply_subset(f, {0, 0, 0.25});
  CHECK(f.classes.size() == 4);
  CHECK(f.samples.size() == 4 * 3);  // round(0.25 * 10) = 3 (2.5 rounds away from zero)
  FolderIndex tiny = idx;
  apply_subset(tiny, {0, 0, 0.01});
  CHECK(tiny.samples.size() == 4);  // at least one per class
}

TEST_CASE("image cache: skip leaves bad files out by reason, subset, header written last",
          "[dataset]") {
  test::ScratchDir d;
  const fs::path root = small_folder(d.path() / "data", 3, 4);
  const FolderIndex full = scan_image_folder(root);
  // One truncated file, one GIF named .JPEG.
  auto cut = test::slurp(full.samples[1].path);
  cut.resize(cut.size() / 2);
  test::spit(full.samples[1].path, cut);
  test::spit(full.samples[6].path, {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0});
  const fs::path dst = d.path() / "c.bin";

  CHECK_THROWS_WITH(
      write_image_cache(root, dst, 16, 2),
      Catch::Contains(full.samples[1].path.string()) && Catch::Contains("truncated JPEG"));
  CHECK_FALSE(fs::exists(dst));

  const CachePlan plan = plan_image_cache(root, 16);
  CHECK(plan.index.samples.size() == 12);
  CacheWriteOptions o;
  o.workers = 2;
  o.skip_errors = true;
  std::vector<CacheProgress> seen;
  bool partial_had_magic = false;
  o.progress = [&](const CacheProgress& p) {
    seen.push_back(p);
    // Until the end the file has no header: an interrupted cache is no cache.
    const auto bytes = test::slurp(dst.string() + ".partial");
    partial_had_magic |= bytes.size() >= 8 && std::memcmp(bytes.data(), kCacheMagic, 8) == 0;
  };
  const CacheWriteSummary s = write_image_cache(plan, dst, o);
  CHECK_FALSE(partial_had_magic);
  REQUIRE_FALSE(seen.empty());
  CHECK(seen.back().done == 12);
  CHECK(seen.back().skipped == 2);
  CHECK(s.images == 10);
  REQUIRE(s.skipped.size() == 2);
  CHECK(s.skipped[0].reason == kReasonTruncated);
  CHECK(s.skipped[1].reason == kReasonUnsupported);
  CHECK_THAT(s.skipped[1].message, Catch::Contains("GIF data"));
  CHECK_FALSE(fs::exists(dst.string() + ".partial"));
  const ImageCache cache(dst);
  REQUIRE(cache.size() == 10);
  CHECK(s.file_bytes <= plan.file_bytes);
  CHECK(fs::file_size(dst) == s.file_bytes);
  // The labels of the kept files, in order: class 0 lost sample 1, class 1 lost sample 6.
  const std::vector<std::int32_t> labels = {0, 0, 0, 1, 1, 1, 2, 2, 2, 2};
  for (std::int64_t i = 0; i < cache.size(); ++i)
    CHECK(cache.label(i) == labels[static_cast<std::size_t>(i)]);

  // A subset: 2 classes x 2 files, and the free space is readable.
  Subset sub;
  sub.classes = 2;
  sub.per_class = 2;
  const CachePlan small = plan_image_cache(root, 16, {}, sub);
  CHECK(small.index.samples.size() == 4);
  CHECK(small.file_bytes < plan.file_bytes);
  CHECK(free_bytes(d.path()) > 0);
  CHECK_THROWS_WITH(free_bytes(d.path() / "absent"), Catch::Contains("absent"));
}

TEST_CASE("progress: a bar with rate and ETA on a terminal, plain lines elsewhere", "[dataset]") {
  CHECK(format_duration(5) == "5s");
  CHECK(format_duration(271) == "4m31s");
  CHECK(format_duration(7500) == "2h05m");
  CHECK(format_duration(-1) == "?");
  const std::string bar = format_progress_bar(50, 200, 10.0, 20);
  CHECK_THAT(bar, Catch::StartsWith("[#####...............]"));
  CHECK_THAT(bar, Catch::Contains("25.0%") && Catch::Contains("50/200") &&
                      Catch::Contains("5 img/s") && Catch::Contains("ETA 30s"));
  CHECK_THAT(format_progress_line(0, 10, 0.0), Catch::Contains("ETA ?"));
  std::ostringstream term, log;
  ProgressMeter t("cache", 100, term, true, 10.0);
  ProgressMeter l("cache", 100, log, false, 0.0);
  for (int i = 1; i <= 100; ++i) {
    l.update(i);
    if (i == 1) std::this_thread::sleep_for(std::chrono::milliseconds(120));
    t.update(i);
  }
  t.finish();
  l.finish();
  CHECK(term.str().find('\r') != std::string::npos);
  CHECK(term.str().back() == '\n');
  CHECK(log.str().find('\r') == std::string::npos);
  CHECK(log.str().find("\x1b") == std::string::npos);
  CHECK_THAT(log.str(), Catch::Contains("cache: 100/100 images (100.0%)"));
}
