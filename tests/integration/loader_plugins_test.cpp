// The imagefolder and cached loaders through the real registry, on a generated JPEG folder:
// batch shapes, dtypes and value ranges, channels-last, determinism for a seed whatever the
// workers, counters, on_error both ways, and the `orch dataset` commands and an `orch run`.
#include <orch/imagedata/image_cache.h>
#include <orch/imagedata/image_folder.h>
#include <orch/imagedata/image_generator.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "integration/test_support.h"
#include "plan/plugin_params.h"
#include "storage/store.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

constexpr int kClasses = 4, kPerClass = 6, kBatch = 8, kSize = 32;

// One generated folder (4 classes x 6 images) and its cache, shared by the tests.
const std::filesystem::path& dataset_dir() {
  static test::TempDir dir;
  static const bool made = [] {
    imagedata::GeneratorOptions o;
    o.classes = kClasses;
    o.per_class = kPerClass;
    o.seed = 3;
    imagedata::make_dataset(dir.path() / "data", o);
    imagedata::write_image_cache(dir.path() / "data", dir.path() / "cache.bin", 48);
    return true;
  }();
  (void)made;
  return dir.path();
}

std::shared_ptr<DataLoader> make_loader(const std::string& plugin,
                                        std::map<std::string, Value> params, std::int64_t seed = 1,
                                        bool channels_last = false) {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kDataLoader, plugin);
  REQUIRE(info != nullptr);
  params.emplace("image_size", std::int64_t{kSize});
  const PluginChoice choice{plugin, resolve_params(*info, params)};
  return test::built_plugins().create_loader(choice, {kBatch, torch::kCPU, seed, channels_last});
}

std::shared_ptr<DataLoader> folder_loader(std::int64_t workers, std::int64_t seed = 1,
                                          bool channels_last = false) {
  return make_loader("imagefolder",
                     {{"root", (dataset_dir() / "data").string()}, {"workers", workers}}, seed,
                     channels_last);
}

std::shared_ptr<DataLoader> cached_loader(std::int64_t workers, std::int64_t seed = 1,
                                          bool channels_last = false) {
  return make_loader("cached",
                     {{"path", (dataset_dir() / "cache.bin").string()}, {"workers", workers}}, seed,
                     channels_last);
}

void check_batch(const Batch& b) {
  REQUIRE(b.images.sizes() == torch::IntArrayRef({kBatch, 3, kSize, kSize}));
  CHECK(b.images.dtype() == torch::kFloat32);
  CHECK(b.labels.dtype() == torch::kInt64);
  REQUIRE(b.labels.sizes() == torch::IntArrayRef({kBatch}));
  CHECK(b.labels.min().item<std::int64_t>() >= 0);
  CHECK(b.labels.max().item<std::int64_t>() < kClasses);
  // ImageNet normalisation of [0, 1]: (0 - 0.485) / 0.229 .. (1 - 0.406) / 0.225
  CHECK(b.images.min().item<float>() >= -2.1180f);
  CHECK(b.images.max().item<float>() <= 2.6401f);
  CHECK(b.images.std().item<float>() > 0.2f);
  // Each channel normalised with its own mean: the per-channel means differ.
  const auto means = b.images.mean({0, 2, 3});
  CHECK(std::abs(means[0].item<float>() - means[2].item<float>()) > 1e-3);
}

}  // namespace

TEST_CASE("imagefolder and cached: batch shapes, dtypes, value ranges", "[loader]") {
  for (auto loader : {folder_loader(2), cached_loader(2)}) {
    CHECK(loader->num_classes() == kClasses);
    CHECK(loader->sample_shape() == std::vector<std::int64_t>{3, kSize, kSize});
    for (int i = 0; i < 4; ++i) check_batch(loader->next());
  }
}

TEST_CASE("imagefolder and cached: deterministic for a seed, whatever the workers", "[loader]") {
  for (const std::string plugin : {"imagefolder", "cached"}) {
    INFO(plugin);
    auto make = [&](std::int64_t workers, std::int64_t seed) {
      return plugin == "imagefolder" ? folder_loader(workers, seed) : cached_loader(workers, seed);
    };
    auto one = make(1, 5), three = make(3, 5), other_seed = make(3, 6);
    std::multiset<std::int64_t> epoch_labels;
    bool seed_differs = false;
    // 24 images, batches of 8: 3 batches an epoch, so 5 batches cross into the second epoch.
    for (int i = 0; i < 5; ++i) {
      const Batch a = one->next(), b = three->next(), c = other_seed->next();
      CHECK(torch::equal(a.images, b.images));
      CHECK(torch::equal(a.labels, b.labels));
      seed_differs = seed_differs || !torch::equal(a.images, c.images);
      if (i < 3)
        for (int k = 0; k < kBatch; ++k) epoch_labels.insert(a.labels[k].item<std::int64_t>());
    }
    CHECK(seed_differs);
    // An epoch holds every image once: each class's 6 images.
    for (int c = 0; c < kClasses; ++c) CHECK(epoch_labels.count(c) == kPerClass);
  }
}

TEST_CASE("imagefolder and cached: channels-last batches hold the same values", "[loader]") {
  for (const std::string plugin : {"imagefolder", "cached"}) {
    INFO(plugin);
    auto plain = plugin == "imagefolder" ? folder_loader(2, 9, false) : cached_loader(2, 9, false);
    auto last = plugin == "imagefolder" ? folder_loader(2, 9, true) : cached_loader(2, 9, true);
    const Batch a = plain->next(), b = last->next();
    CHECK(a.images.is_contiguous());
    CHECK(b.images.is_contiguous(at::MemoryFormat::ChannelsLast));
    CHECK_FALSE(b.images.is_contiguous());
    CHECK(torch::equal(a.images, b.images));
  }
}

TEST_CASE("imagefolder: counters", "[loader]") {
  auto loader = folder_loader(2);
  for (int i = 0; i < 3; ++i) loader->next();
  const auto c = loader->counters();
  CHECK(c.at("images") >= 3 * kBatch);
  CHECK(c.at("bytes_read") > 3 * kBatch * 20000.0);  // generated files are ~100 KB
  CHECK(c.at("decode_ms") > 0);
  CHECK(c.at("skipped") == 0);
  CHECK(c.at("workers") == 2);
  CHECK(c.at("pinned") == 0);  // no CUDA device: nothing to pin for
  CHECK(c.count("queue_empty_waits") == 1);
  CHECK(c.at("queue_wait_ms") >= 0);
  auto cached = cached_loader(1);
  cached->next();
  CHECK(cached->counters().at("bytes_read") >= kBatch * 48.0 * 48 * 3);
}

TEST_CASE("imagefolder: a corrupt file fails the run naming it, or is counted and skipped",
          "[loader]") {
  test::TempDir tmp;
  imagedata::GeneratorOptions o;
  o.classes = 2;
  o.per_class = 8;
  imagedata::make_dataset(tmp.path(), o);
  const auto index = imagedata::scan_image_folder(tmp.path());
  const auto victim = index.samples[5].path;
  {
    std::ifstream in(victim, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 3);
  }
  auto failing =
      make_loader("imagefolder", {{"root", tmp.path().string()}, {"workers", std::int64_t{2}}});
  // 16 images, batches of 8: the bad file is in one of the first two batches.
  try {
    failing->next();
    failing->next();
    FAIL("a corrupt file did not fail the loader");
  } catch (const std::exception& e) {
    // The real reason: the file ends early (a third of it is left).
    CHECK_THAT(e.what(), Contains(victim.filename().string()) && Contains("truncated JPEG"));
  }
  auto skipping = make_loader("imagefolder", {{"root", tmp.path().string()},
                                              {"workers", std::int64_t{2}},
                                              {"on_error", std::string("skip")}});
  for (int i = 0; i < 4; ++i) check_batch(skipping->next());
  const auto counters = skipping->counters();
  CHECK(counters.at("skipped") >= 1);
  // Counted by reason too, and every skip has one.
  REQUIRE(counters.count("skipped.truncated") == 1);
  CHECK(counters.at("skipped.truncated") == counters.at("skipped"));

  // A missing root and an unset root are clear errors, not crashes.
  CHECK_THROWS_WITH(make_loader("imagefolder", {{"root", (tmp.path() / "absent").string()}}),
                    Contains("absent") && Contains("no such folder"));
  CHECK_THROWS_WITH(make_loader("imagefolder", {}), Contains("data.root"));
  CHECK_THROWS_WITH(make_loader("cached", {{"path", (tmp.path() / "none.bin").string()}}),
                    Contains("none.bin"));
}

TEST_CASE("orch dataset make, cache and bench through the binary", "[loader][cli]") {
  test::TempDir tmp;
  const auto dir = tmp.path() / "gen";
  auto made =
      test::run_orch("dataset make '" + dir.string() + "' --classes 2 --per-class 3 --seed 1");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  CHECK_THAT(made.output, Contains("6 JPEGs"));
  auto again = test::run_orch("dataset make '" + dir.string() + "' --classes 2 --per-class 3");
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.output, Contains("not empty"));
  auto cached = test::run_orch("dataset cache '" + dir.string() + "' '" +
                               (tmp.path() / "c.bin").string() + "' --size 40");
  INFO(cached.output);
  REQUIRE(cached.exit_code == 0);
  CHECK(imagedata::ImageCache(tmp.path() / "c.bin").size() == 6);
  // --on-error skip with a GIF named .JPEG, a subset, plain progress lines off a terminal.
  const auto gif = dir / "train" / imagedata::class_folder_name(1) /
                   (imagedata::class_folder_name(1) + "_0.JPEG");
  std::ofstream(gif, std::ios::binary | std::ios::trunc) << "GIF89a not really";
  auto strict = test::run_orch("dataset cache '" + dir.string() + "' '" +
                               (tmp.path() / "s.bin").string() + "' --size 40");
  CHECK(strict.exit_code == 2);
  CHECK_THAT(strict.output, Contains(gif.string() + ": GIF data"));
  CHECK_FALSE(std::filesystem::exists(tmp.path() / "s.bin"));
  auto skipped = test::run_orch("dataset cache '" + dir.string() + "' '" +
                                (tmp.path() / "s.bin").string() + "' --size 40 --on-error skip");
  INFO(skipped.output);
  REQUIRE(skipped.exit_code == 0);
  CHECK_THAT(skipped.output, Contains("6 images of 2 classes") && Contains("free in"));
  CHECK_THAT(skipped.output, Contains("skipped 1 file: 1 unsupported"));
  CHECK(skipped.output.find('\r') == std::string::npos);
  CHECK(imagedata::ImageCache(tmp.path() / "s.bin").size() == 5);
  auto subset =
      test::run_orch("dataset cache '" + dir.string() + "' '" + (tmp.path() / "t.bin").string() +
                     "' --size 16 --classes 1 --per-class 2");
  INFO(subset.output);
  REQUIRE(subset.exit_code == 0);
  CHECK(imagedata::ImageCache(tmp.path() / "t.bin").size() == 2);
  auto both = test::run_orch("dataset cache '" + dir.string() + "' '" +
                             (tmp.path() / "u.bin").string() + "' --per-class 1 --fraction 0.5");
  CHECK(both.exit_code == 2);
  auto missing = test::run_orch("dataset cache '" + (tmp.path() / "nope").string() + "' '" +
                                (tmp.path() / "d.bin").string() + "'");
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Contains("no such folder"));
  std::filesystem::remove(gif);  // the bench reads the folder with on_error: fail
  auto bench =
      test::run_orch("dataset bench --data '{plugin: imagefolder, root: " + dir.string() +
                     ", workers: 2, image_size: 32}' --batch-size 2 --batches 4 --warmup 1");
  INFO(bench.output);
  REQUIRE(bench.exit_code == 0);
  CHECK_THAT(bench.output, Contains("img/s") && Contains("data.decode_ms"));
  auto bad = test::run_orch("dataset bench --data '{plugin: imagefolder, wrkers: 2}'");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Contains("wrkers"));
  // A busy GPU needs a GPU: refused before any loader starts, saying what to pass.
  auto busy = test::run_orch("dataset bench --data '{plugin: imagefolder, root: " + dir.string() +
                             "}' --busy-gpu-ms 50");
  CHECK(busy.exit_code == 2);
  CHECK_THAT(busy.output, Contains("--busy-gpu-ms") && Contains("--device cuda"));
  CHECK_THAT(busy.output, !Contains("img/s"));
  auto negative = test::run_orch("dataset bench --data synthetic --busy-gpu-ms -1");
  CHECK(negative.exit_code != 0);
  CHECK_THAT(negative.output, Contains("busy-gpu-ms"));
}

TEST_CASE(
    "orch dataset cache replaces only a cache: a database, an experiment file, a link "
    "and a FIFO as the destination are refused before the scan, untouched",
    "[loader][cli]") {
  test::TempDir tmp;
  const auto dir = tmp.path() / "gen";
  REQUIRE(test::run_orch("dataset make '" + dir.string() + "' --classes 1 --per-class 2 --seed 1")
              .exit_code == 0);
  const auto cache = [&](const std::filesystem::path& dst) {
    return test::run_orch("dataset cache '" + dir.string() + "' '" + dst.string() + "' --size 16");
  };
  const auto db = tmp.path() / "results.db";
  { storage::Store store(db.string()); }
  const auto yaml = tmp.path() / "night.yaml";
  std::ofstream(yaml) << "name: night\n";
  const auto target = tmp.path() / "target.txt";
  std::ofstream(target) << "keep me";
  const auto link = tmp.path() / "link.bin";
  std::filesystem::create_symlink(target, link);
  const auto fifo = tmp.path() / "fifo.bin";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const auto& [dst, said] : std::vector<std::pair<std::filesystem::path, std::string>>{
           {db, "exists and is not an orch image cache"},
           {yaml, "exists and is not an orch image cache"},
           {link, "is a symbolic link"},
           {fifo, "is not a regular file"}}) {
    const std::string before = std::filesystem::is_fifo(dst) ? "" : test::slurp(dst);
    auto r = cache(dst);
    INFO(dst << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains(said) && Contains("a cache replaces only an earlier orch "
                                                    "image cache"));
    CHECK_THAT(r.output, !Contains("images of"));  // refused before the scan
    if (!std::filesystem::is_fifo(dst)) CHECK(test::slurp(dst) == before);
  }
  CHECK(std::filesystem::is_symlink(link));
  CHECK(test::slurp(target) == "keep me");
  CHECK(std::filesystem::is_fifo(fifo));
  // An earlier cache is replaced; a link planted at the temporary name is not written through.
  const auto c = tmp.path() / "c.bin";
  REQUIRE(cache(c).exit_code == 0);
  std::filesystem::create_symlink(target, c.string() + ".partial");
  auto planted = cache(c);
  INFO(planted.output);
  CHECK(planted.exit_code == 2);
  CHECK_THAT(planted.output, Contains(".partial: is in the way"));
  CHECK(test::slurp(target) == "keep me");
  std::filesystem::remove(c.string() + ".partial");
  auto again = cache(c);
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(imagedata::ImageCache(c).size() == 2);
}

TEST_CASE("orch run trains ResNet18 from a generated JPEG folder", "[loader][cli]") {
  test::TempDir tmp;
  imagedata::GeneratorOptions o;
  o.classes = 4;
  o.per_class = 16;
  imagedata::make_dataset(tmp.path() / "data", o);
  std::ofstream(tmp.path() / "jpeg.yaml")
      << "name: jpeg\nbase:\n  model: {plugin: resnet, depth: 18}\n"
      << "  data: {plugin: imagefolder, root: " << (tmp.path() / "data").string()
      << ", image_size: 64, workers: 2}\n"
      << "  batch_size: 8\n  steps: {warmup: 1, measure: 3}\n  device: cpu\n";
  const auto db = tmp.path() / "r.db";
  auto r = test::run_orch("--db '" + db.string() + "' run '" + (tmp.path() / "jpeg.yaml").string() +
                          "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  storage::Store store(db.string());
  storage::Statement st(
      store.database(),
      "SELECT status, images_per_s, json_extract(document_json, '$.counters.\"data.images\"'), "
      "json_extract(document_json, '$.counters.\"data.bytes_read\"') FROM runs WHERE experiment = "
      "'jpeg'");
  REQUIRE(st.step());
  CHECK(st.column_text(0) == "ok");
  CHECK(st.column_double(1) > 0);
  // The loader's counters are recorded with the run: at least the 4 steps' 32 images.
  CHECK(st.column_double(2) >= 32);
  CHECK(st.column_double(3) > 0);
}

TEST_CASE("imagefolder: shuffle off keeps folder order; drop_last off keeps the short batch",
          "[loader]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kDataLoader, "imagefolder");
  REQUIRE(info != nullptr);
  const PluginChoice choice{"imagefolder",
                            resolve_params(*info, {{"root", (dataset_dir() / "data").string()},
                                                   {"image_size", std::int64_t{kSize}},
                                                   {"shuffle", false},
                                                   {"drop_last", false},
                                                   {"workers", std::int64_t{2}}})};
  auto loader = test::built_plugins().create_loader(choice, {10, torch::kCPU, 0, false});
  // 24 images in batches of 10: 10, 10, 4, then the next epoch.
  const Batch a = loader->next(), b = loader->next(), c = loader->next(), d = loader->next();
  CHECK(a.images.size(0) == 10);
  CHECK(b.images.size(0) == 10);
  CHECK(c.images.size(0) == 4);
  CHECK(d.images.size(0) == 10);
  // Folder order: class 0's six images, then class 1's.
  const std::vector<std::int64_t> want = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  CHECK(std::vector<std::int64_t>(a.labels.data_ptr<std::int64_t>(),
                                  a.labels.data_ptr<std::int64_t>() + 10) == want);
  CHECK(torch::equal(a.labels, d.labels));
  CHECK(c.labels.min().item<std::int64_t>() == kClasses - 1);
  // Same images, new crops in the next epoch.
  CHECK_FALSE(torch::equal(a.images, d.images));

  const PluginChoice strict{"imagefolder",
                            resolve_params(*info, {{"root", (dataset_dir() / "data").string()}})};
  CHECK_THROWS_WITH(test::built_plugins().create_loader(strict, {64, torch::kCPU, 0, false}),
                    Contains("fewer than one batch"));
}
