// `orch dataset make|cache|bench`: an ImageNet-shaped JPEG folder generated from a seed, its
// pre-decoded cache for the `cached` loader, and a loader-only benchmark (a data loader created
// through the registry, its next() timed, no model).
#include <fmt/format.h>
#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/image_cache.h>
#include <orch/imagedata/image_generator.h>
#include <orch/imagedata/progress_meter.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "cli/command_failure.h"
#include "cli/commands.h"
#include "cli/number_checks.h"
#include "cli/plugin_loading.h"
#include "plan/plan_error.h"
#include "plan/plugin_params.h"
#include "plan/yaml_tree.h"
#include "runner/busy_gpu.h"

namespace orch::cli {
namespace {

// The progress display goes to stderr, so stdout keeps only the summary line.
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

std::string human_bytes(std::uint64_t b) {
  if (b >= 1'000'000'000ull) return fmt::format("{:.1f} GB", static_cast<double>(b) / 1e9);
  return fmt::format("{:.1f} MB", static_cast<double>(b) / 1e6);
}

// A full, read-only or failing file system is the machine's fault (exit 4); anything else
// (a source that is no image folder, a destination in the way) is the command's (exit 2).
CommandFailure dataset_failure(const std::string& who, const imagedata::DatasetError& e) {
  return CommandFailure(e.reason() == imagedata::kReasonStorage ? kExitEnvironment : kExitBadInput,
                        who + e.what());
}

struct DatasetMakeArgs {
  std::string dir;
  imagedata::GeneratorOptions gen;
};

int run_dataset_make(const DatasetMakeArgs& a, const GlobalOptions& /*g*/) {
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const std::int64_t total = static_cast<std::int64_t>(a.gen.classes) * a.gen.per_class;
    imagedata::ProgressMeter meter("dataset make", total, std::cerr, stderr_is_terminal());
    imagedata::GeneratorOptions gen = a.gen;
    gen.progress = [&meter](std::int64_t done, std::int64_t) { meter.update(done); };
    const auto s = imagedata::make_dataset(a.dir, gen);
    meter.update(total);
    meter.finish();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << fmt::format(
        "{}/train: {} classes x {} images = {} JPEGs, {:.1f} MB (mean {:.1f} KB, {:.0f}x{:.0f}) "
        "in {:.1f} s\n",
        a.dir, a.gen.classes, a.gen.per_class, s.files, s.bytes / 1e6,
        s.bytes / 1e3 / static_cast<double>(s.files), s.mean_width, s.mean_height, secs);
  } catch (const imagedata::DatasetError& e) {
    throw dataset_failure("orch: dataset make: ", e);
  }
  return kExitOk;
}

void add_make(CLI::App& dataset, GlobalOptions& g, int& exit_code) {
  auto* cmd =
      dataset.add_subcommand("make",
                             "generate an ImageNet-shaped JPEG folder DIR/train/<class>/*.JPEG "
                             "(photo-like, ~500x375, ~110 KB per file, byte-identical for a seed)");
  auto a = std::make_shared<DatasetMakeArgs>();
  cmd->add_option("DIR", a->dir, "the folder to create (DIR/train must be absent or empty)")
      ->required();
  cmd->add_option("--classes", a->gen.classes, "number of classes")
      ->required()
      ->check(number_between(1, 100000, "INT"));
  cmd->add_option("--per-class", a->gen.per_class, "images per class")
      ->required()
      ->check(number_between(1, 10000000, "INT"));
  cmd->add_option("--seed", a->gen.seed, "everything is a function of the seed")
      ->capture_default_str();
  cmd->add_option("--quality", a->gen.quality, "JPEG quality")
      ->capture_default_str()
      ->check(number_between(1, 100, "INT"));
  cmd->add_option("--workers", a->gen.workers, "threads (default: min(16, cores - 2))");
  cmd->callback([&g, &exit_code, a] { exit_code = run_dataset_make(*a, g); });
}

struct DatasetCacheArgs {
  std::string src, dst, on_error = "fail", split = "train";
  int size = 256, workers = 0;
  imagedata::Subset subset;
};

// What the cache will hold, its skips so far said; refused when the disk cannot take it.
imagedata::CachePlan plan_cache(const DatasetCacheArgs& a) {
  imagedata::check_cache_destination(a.dst);  // before a scan and decoding of hours
  imagedata::ScanOptions scan;
  scan.split = a.split;
  scan.skip_errors = a.on_error == "skip";
  imagedata::CachePlan plan = imagedata::plan_image_cache(a.src, a.size, scan, a.subset);
  for (const auto& s : plan.index.skipped)
    std::cerr << "orch: dataset cache: skipped " << s.message << "\n";
  // Checked before anything is written: a cache that fills the disk after hours helps no one.
  std::filesystem::path dir = std::filesystem::absolute(a.dst).parent_path();
  const std::uint64_t free = imagedata::free_bytes(dir);
  std::cout << fmt::format("{}: {} images of {} classes at {}x{}: {} to write, {} free in {}\n",
                           a.dst, plan.index.samples.size(), plan.index.classes.size(), a.size,
                           a.size, human_bytes(plan.file_bytes), human_bytes(free), dir.string())
            << std::flush;
  if (free < plan.file_bytes) {
    throw bad_input(fmt::format(
        "orch: dataset cache: not enough space in {}: the cache needs {} and {} are free; "
        "free space, write elsewhere, or cache a subset (--classes, --per-class, "
        "--fraction, a smaller --size)",
        dir.string(), human_bytes(plan.file_bytes), human_bytes(free)));
  }
  return plan;
}

// The cache written, its decoding skips said as they were counted by reason.
void print_cache_written(const DatasetCacheArgs& a, const imagedata::CachePlan& plan,
                         const imagedata::CacheWriteSummary& s, double secs) {
  // The scan's skips were reported before the decoding began.
  for (std::size_t i = plan.index.skipped.size(); i < s.skipped.size(); ++i)
    std::cerr << "orch: dataset cache: skipped " << s.skipped[i].message << "\n";
  std::cout << fmt::format("{}: {} images of {}x{}, {:.1f} MB, in {:.1f} s ({:.0f} img/s)\n", a.dst,
                           s.images, a.size, a.size, s.file_bytes / 1e6, secs, s.images / secs);
  if (s.skipped.empty()) return;
  std::map<std::string, std::int64_t> by_reason;
  for (const auto& e : s.skipped) ++by_reason[e.reason];
  std::string list;
  for (const auto& [reason, n] : by_reason)
    list += fmt::format("{}{} {}", list.empty() ? "" : ", ", n, reason);
  std::cout << fmt::format("skipped {} file{}: {}\n", s.skipped.size(),
                           s.skipped.size() == 1 ? "" : "s", list);
}

int run_dataset_cache(const DatasetCacheArgs& a, const GlobalOptions& /*g*/) {
  std::optional<imagedata::ProgressMeter> meter;
  try {
    const imagedata::CachePlan plan = plan_cache(a);
    const auto t0 = std::chrono::steady_clock::now();
    meter.emplace("dataset cache", static_cast<std::int64_t>(plan.index.samples.size()), std::cerr,
                  stderr_is_terminal());
    imagedata::CacheWriteOptions w;
    w.workers = a.workers;
    w.skip_errors = a.on_error == "skip";
    std::int64_t skipped = 0;
    w.progress = [&](const imagedata::CacheProgress& p) {
      skipped = p.skipped;
      meter->update(p.done, p.skipped ? fmt::format("  {} skipped", p.skipped) : "");
    };
    const auto s = imagedata::write_image_cache(plan, a.dst, w);
    meter->finish(skipped ? fmt::format("  {} skipped", skipped) : "");
    meter.reset();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_cache_written(a, plan, s, secs);
  } catch (const imagedata::DatasetError& e) {
    if (meter) meter->finish();  // ends a terminal's progress line before the message
    throw dataset_failure("orch: dataset cache: ", e);
  }
  return kExitOk;
}

void add_cache(CLI::App& dataset, GlobalOptions& g, int& exit_code) {
  auto* cmd = dataset.add_subcommand(
      "cache",
      "pre-decode an image folder into one memory-mappable file of SIZE x SIZE uint8 "
      "images (shorter side resized to SIZE, centre square) for the `cached` loader");
  auto a = std::make_shared<DatasetCacheArgs>();
  cmd->add_option("SRC", a->src,
                  "the image folder (SRC/train/<class>/*.JPEG or SRC/<class>/*.JPEG)")
      ->required();
  cmd->add_option("DST", a->dst, "the cache file to write")->required();
  cmd->add_option("--size", a->size, "pixels per side of each cached image")
      ->capture_default_str()
      ->check(number_between(8, 4096, "INT"));
  cmd->add_option("--workers", a->workers, "threads (default: min(16, cores - 2))");
  cmd->add_option("--on-error", a->on_error,
                  "a file that cannot be decoded stops the cache (fail), or is left out and "
                  "counted by reason (skip)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fail", "skip"}));
  cmd->add_option("--split", a->split, "SRC/train/<class>/ or SRC/val/<class>/")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "val"}));
  cmd->add_option("--classes", a->subset.classes,
                  "only the first N classes in sorted order (labels 0..N-1)")
      ->check(number_between(1, 100000000, "INT"));
  auto* per_class = cmd->add_option("--per-class", a->subset.per_class,
                                    "at most M images of each class (a fixed spread sample)")
                        ->check(number_between(1, 100000000, "INT"));
  cmd->add_option("--fraction", a->subset.fraction,
                  "F (0 < F <= 1) of each class's images, at least one (a fixed spread sample)")
      ->check(number_between(0.0, 1.0, "FLOAT"))
      ->excludes(per_class);
  cmd->callback([&g, &exit_code, a] { exit_code = run_dataset_cache(*a, g); });
}

struct DatasetBenchArgs {
  std::string data = "synthetic";
  std::int64_t batch_size = 256, batches = 50, warmup = 5, seed = 0;
  bool channels_last = false;
  std::string device = "cpu";
  double busy_gpu_ms = 0;
};

// --data, read as an experiment file's `data:` is; refused as bad input with where it is wrong.
PluginChoice loader_choice(const DatasetBenchArgs& a, const PluginRegistry& registry) {
  try {
    const YNode node = parse_yaml(a.data, std::make_shared<const std::string>("--data"));
    return resolve_choice(parse_plugin_choice(node, PluginKind::kDataLoader, "data", registry));
  } catch (const PlanError& e) {
    throw bad_input(std::string("orch: dataset bench: ") + e.what());
  }
}

int run_dataset_bench(const DatasetBenchArgs& a, const GlobalOptions& g) {
  PluginRegistry registry;
  load_registry(registry, g);
  const PluginChoice choice = loader_choice(a, registry);
  const torch::Device device(a.device);
  if (a.busy_gpu_ms > 0 && !device.is_cuda()) {
    throw bad_input(
        "orch: dataset bench: --busy-gpu-ms needs a CUDA device (--device cuda); the device is " +
        device.str());
  }
  // Started before the loader, so the loader meets a busy GPU from its first batch.
  std::optional<BusyGpu> busy;
  if (a.busy_gpu_ms > 0) {
    busy.emplace(device, a.busy_gpu_ms);
    std::cout << fmt::format("busy GPU: a graph of {} bf16 products, {:.1f} ms a replay (idle)\n",
                             busy->products(), busy->replay_ms());
  }
  auto loader = registry.create_loader(choice, {a.batch_size, device, a.seed, a.channels_last});
  for (std::int64_t i = 0; i < a.warmup; ++i) loader->next();
  const std::int64_t replays_before = busy ? busy->replays() : 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t images = 0;
  for (std::int64_t i = 0; i < a.batches; ++i) images += loader->next().images.size(0);
  // A loader that delivers on the device (nvjpeg) may return before its last kernels end.
  if (device.is_cuda()) torch::cuda::synchronize();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("{}: {} batches of {} in {:.2f} s: {:.0f} img/s ({:.1f} ms/batch)\n",
                           choice.plugin, a.batches, a.batch_size, secs, images / secs,
                           secs * 1000.0 / a.batches);
  for (const auto& [k, v] : loader->counters())
    std::cout << fmt::format("  data.{} = {:g}\n", k, v);
  if (busy) {
    // Longer than on the idle GPU: the loader's work took its share.
    const auto replays = busy->replays() - replays_before;
    std::cout << fmt::format("busy GPU: {} replays while timing, {:.1f} ms each\n", replays,
                             replays ? secs * 1000.0 / static_cast<double>(replays) : 0.0);
  }
  return kExitOk;
}

void add_bench(CLI::App& dataset, GlobalOptions& g, int& exit_code) {
  auto* cmd = dataset.add_subcommand(
      "bench",
      "loader-only throughput: create a data loader through the plugin registry and "
      "time next() (no model, no device copy)");
  auto a = std::make_shared<DatasetBenchArgs>();
  cmd->add_option("--data", a->data,
                  "the loader as in an experiment file's `data:`, e.g. "
                  "'{plugin: imagefolder, root: DIR, workers: 8}'")
      ->required();
  cmd->add_option("--batch-size", a->batch_size, "images per batch")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--batches", a->batches, "batches timed")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--warmup", a->warmup, "batches taken before timing")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd->add_option("--seed", a->seed, "the run seed the loader gets")->capture_default_str();
  cmd->add_option("--device", a->device,
                  "the device the loader is told about (pins host memory for cuda)")
      ->capture_default_str();
  cmd->add_flag("--channels-last", a->channels_last, "ask for channels-last batches");
  cmd->add_option("--busy-gpu-ms", a->busy_gpu_ms,
                  "keep the GPU busy while timing, as a graph-captured training step of about "
                  "this many ms would (a CUDA graph of bf16 matrix products replayed back to "
                  "back); 0: an idle GPU. Needs --device cuda")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd->callback([&g, &exit_code, a] { exit_code = run_dataset_bench(*a, g); });
}

}  // namespace

void add_dataset_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand("dataset", "make a JPEG dataset, cache it, benchmark a loader");
  cmd->require_subcommand(1);
  add_make(*cmd, g, exit_code);
  add_cache(*cmd, g, exit_code);
  add_bench(*cmd, g, exit_code);
}

}  // namespace orch::cli
