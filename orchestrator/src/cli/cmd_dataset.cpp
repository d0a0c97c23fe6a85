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

#include "cli/commands.h"
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

void add_make(CLI::App& dataset, int& exit_code) {
  auto* cmd =
      dataset.add_subcommand("make",
                             "generate an ImageNet-shaped JPEG folder DIR/train/<class>/*.JPEG "
                             "(photo-like, ~500x375, ~110 KB per file, byte-identical for a seed)");
  struct Options {
    std::string dir;
    imagedata::GeneratorOptions gen;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("DIR", o->dir, "the folder to create (DIR/train must be absent or empty)")
      ->required();
  cmd->add_option("--classes", o->gen.classes, "number of classes")
      ->required()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--per-class", o->gen.per_class, "images per class")
      ->required()
      ->check(CLI::Range(1, 10000000));
  cmd->add_option("--seed", o->gen.seed, "everything is a function of the seed")
      ->capture_default_str();
  cmd->add_option("--quality", o->gen.quality, "JPEG quality")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--workers", o->gen.workers, "threads (default: min(16, cores - 2))");
  cmd->callback([&exit_code, o] {
    try {
      const auto t0 = std::chrono::steady_clock::now();
      const std::int64_t total = static_cast<std::int64_t>(o->gen.classes) * o->gen.per_class;
      imagedata::ProgressMeter meter("dataset make", total, std::cerr, stderr_is_terminal());
      imagedata::GeneratorOptions gen = o->gen;
      gen.progress = [&meter](std::int64_t done, std::int64_t) { meter.update(done); };
      const auto s = imagedata::make_dataset(o->dir, gen);
      meter.update(total);
      meter.finish();
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::cout << fmt::format(
          "{}/train: {} classes x {} images = {} JPEGs, {:.1f} MB (mean {:.1f} KB, {:.0f}x{:.0f}) "
          "in {:.1f} s\n",
          o->dir, o->gen.classes, o->gen.per_class, s.files, s.bytes / 1e6,
          s.bytes / 1e3 / static_cast<double>(s.files), s.mean_width, s.mean_height, secs);
    } catch (const imagedata::DatasetError& e) {
      std::cerr << "orch: dataset make: " << e.what() << "\n";
      exit_code = kExitBadInput;
    }
  });
}

void add_cache(CLI::App& dataset, int& exit_code) {
  auto* cmd = dataset.add_subcommand(
      "cache",
      "pre-decode an image folder into one memory-mappable file of SIZE x SIZE uint8 "
      "images (shorter side resized to SIZE, centre square) for the `cached` loader");
  struct Options {
    std::string src, dst, on_error = "fail", split = "train";
    int size = 256, workers = 0;
    imagedata::Subset subset;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("SRC", o->src,
                  "the image folder (SRC/train/<class>/*.JPEG or SRC/<class>/*.JPEG)")
      ->required();
  cmd->add_option("DST", o->dst, "the cache file to write")->required();
  cmd->add_option("--size", o->size, "pixels per side of each cached image")
      ->capture_default_str()
      ->check(CLI::Range(8, 4096));
  cmd->add_option("--workers", o->workers, "threads (default: min(16, cores - 2))");
  cmd->add_option("--on-error", o->on_error,
                  "a file that cannot be decoded stops the cache (fail), or is left out and "
                  "counted by reason (skip)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fail", "skip"}));
  cmd->add_option("--split", o->split, "SRC/train/<class>/ or SRC/val/<class>/")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "val"}));
  cmd->add_option("--classes", o->subset.classes,
                  "only the first N classes in sorted order (labels 0..N-1)")
      ->check(CLI::Range(1, 100000000));
  auto* per_class = cmd->add_option("--per-class", o->subset.per_class,
                                    "at most M images of each class (a fixed spread sample)")
                        ->check(CLI::Range(1, 100000000));
  cmd->add_option("--fraction", o->subset.fraction,
                  "F (0 < F <= 1) of each class's images, at least one (a fixed spread sample)")
      ->check(CLI::Range(0.0, 1.0))
      ->excludes(per_class);
  cmd->callback([&exit_code, o] {
    std::optional<imagedata::ProgressMeter> meter;
    try {
      imagedata::check_cache_destination(o->dst);  // before a scan and decoding of hours
      imagedata::ScanOptions scan;
      scan.split = o->split;
      scan.skip_errors = o->on_error == "skip";
      const imagedata::CachePlan plan =
          imagedata::plan_image_cache(o->src, o->size, scan, o->subset);
      for (const auto& s : plan.index.skipped)
        std::cerr << "orch: dataset cache: skipped " << s.message << "\n";
      // Checked before anything is written: a cache that fills the disk after hours helps no one.
      std::filesystem::path dir = std::filesystem::absolute(o->dst).parent_path();
      const std::uint64_t free = imagedata::free_bytes(dir);
      std::cout << fmt::format("{}: {} images of {} classes at {}x{}: {} to write, {} free in {}\n",
                               o->dst, plan.index.samples.size(), plan.index.classes.size(),
                               o->size, o->size, human_bytes(plan.file_bytes), human_bytes(free),
                               dir.string())
                << std::flush;
      if (free < plan.file_bytes) {
        std::cerr << fmt::format(
            "orch: dataset cache: not enough space in {}: the cache needs {} and {} are free; "
            "free space, write elsewhere, or cache a subset (--classes, --per-class, "
            "--fraction, a smaller --size)\n",
            dir.string(), human_bytes(plan.file_bytes), human_bytes(free));
        exit_code = kExitBadInput;
        return;
      }
      const auto t0 = std::chrono::steady_clock::now();
      meter.emplace("dataset cache", static_cast<std::int64_t>(plan.index.samples.size()),
                    std::cerr, stderr_is_terminal());
      imagedata::CacheWriteOptions w;
      w.workers = o->workers;
      w.skip_errors = scan.skip_errors;
      std::int64_t skipped = 0;
      w.progress = [&](const imagedata::CacheProgress& p) {
        skipped = p.skipped;
        meter->update(p.done, p.skipped ? fmt::format("  {} skipped", p.skipped) : "");
      };
      const auto s = imagedata::write_image_cache(plan, o->dst, w);
      meter->finish(skipped ? fmt::format("  {} skipped", skipped) : "");
      meter.reset();
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // The scan's skips were reported before the decoding began.
      for (std::size_t i = plan.index.skipped.size(); i < s.skipped.size(); ++i)
        std::cerr << "orch: dataset cache: skipped " << s.skipped[i].message << "\n";
      std::cout << fmt::format("{}: {} images of {}x{}, {:.1f} MB, in {:.1f} s ({:.0f} img/s)\n",
                               o->dst, s.images, o->size, o->size, s.file_bytes / 1e6, secs,
                               s.images / secs);
      if (!s.skipped.empty()) {
        std::map<std::string, std::int64_t> by_reason;
        for (const auto& e : s.skipped) ++by_reason[e.reason];
        std::string list;
        for (const auto& [reason, n] : by_reason)
          list += fmt::format("{}{} {}", list.empty() ? "" : ", ", n, reason);
        std::cout << fmt::format("skipped {} file{}: {}\n", s.skipped.size(),
                                 s.skipped.size() == 1 ? "" : "s", list);
      }
    } catch (const imagedata::DatasetError& e) {
      if (meter) meter->finish();  // ends a terminal's progress line before the message
      std::cerr << "orch: dataset cache: " << e.what() << "\n";
      exit_code = kExitBadInput;
    }
  });
}

void add_bench(CLI::App& dataset, GlobalOptions& g, int& exit_code) {
  auto* cmd = dataset.add_subcommand(
      "bench",
      "loader-only throughput: create a data loader through the plugin registry and "
      "time next() (no model, no device copy)");
  struct Options {
    std::string data = "synthetic";
    std::int64_t batch_size = 256, batches = 50, warmup = 5, seed = 0;
    bool channels_last = false;
    std::string device = "cpu";
    double busy_gpu_ms = 0;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--data", o->data,
                  "the loader as in an experiment file's `data:`, e.g. "
                  "'{plugin: imagefolder, root: DIR, workers: 8}'")
      ->required();
  cmd->add_option("--batch-size", o->batch_size, "images per batch")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batches", o->batches, "batches timed")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", o->warmup, "batches taken before timing")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", o->seed, "the run seed the loader gets")->capture_default_str();
  cmd->add_option("--device", o->device,
                  "the device the loader is told about (pins host memory for cuda)")
      ->capture_default_str();
  cmd->add_flag("--channels-last", o->channels_last, "ask for channels-last batches");
  cmd->add_option("--busy-gpu-ms", o->busy_gpu_ms,
                  "keep the GPU busy while timing, as a graph-captured training step of about "
                  "this many ms would (a CUDA graph of bf16 matrix products replayed back to "
                  "back); 0: an idle GPU. Needs --device cuda")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->callback([&g, &exit_code, o] {
    PluginRegistry registry;
    load_registry(registry, g);
    PluginChoice choice;
    try {
      const YNode node = parse_yaml(o->data, std::make_shared<const std::string>("--data"));
      choice = resolve_choice(parse_plugin_choice(node, PluginKind::kDataLoader, "data", registry));
    } catch (const PlanError& e) {
      std::cerr << "orch: dataset bench: " << e.what() << "\n";
      exit_code = kExitBadInput;
      return;
    }
    const torch::Device device(o->device);
    if (o->busy_gpu_ms > 0 && !device.is_cuda()) {
      std::cerr << "orch: dataset bench: --busy-gpu-ms needs a CUDA device (--device cuda); "
                   "the device is "
                << device.str() << "\n";
      exit_code = kExitBadInput;
      return;
    }
    // Started before the loader, so the loader meets a busy GPU from its first batch.
    std::optional<BusyGpu> busy;
    if (o->busy_gpu_ms > 0) {
      busy.emplace(device, o->busy_gpu_ms);
      std::cout << fmt::format("busy GPU: a graph of {} bf16 products, {:.1f} ms a replay (idle)\n",
                               busy->products(), busy->replay_ms());
    }
    auto loader =
        registry.create_loader(choice, {o->batch_size, device, o->seed, o->channels_last});
    for (std::int64_t i = 0; i < o->warmup; ++i) loader->next();
    const std::int64_t replays_before = busy ? busy->replays() : 0;
    const auto t0 = std::chrono::steady_clock::now();
    std::int64_t images = 0;
    for (std::int64_t i = 0; i < o->batches; ++i) images += loader->next().images.size(0);
    // A loader that delivers on the device (nvjpeg) may return before its last kernels end.
    if (device.is_cuda()) torch::cuda::synchronize();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << fmt::format("{}: {} batches of {} in {:.2f} s: {:.0f} img/s ({:.1f} ms/batch)\n",
                             choice.plugin, o->batches, o->batch_size, secs, images / secs,
                             secs * 1000.0 / o->batches);
    for (const auto& [k, v] : loader->counters())
      std::cout << fmt::format("  data.{} = {:g}\n", k, v);
    if (busy) {
      // Longer than on the idle GPU: the loader's work took its share.
      const auto replays = busy->replays() - replays_before;
      std::cout << fmt::format("busy GPU: {} replays while timing, {:.1f} ms each\n", replays,
                               replays ? secs * 1000.0 / static_cast<double>(replays) : 0.0);
    }
  });
}

}  // namespace

void add_dataset_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand("dataset", "make a JPEG dataset, cache it, benchmark a loader");
  cmd->require_subcommand(1);
  add_make(*cmd, exit_code);
  add_cache(*cmd, exit_code);
  add_bench(*cmd, g, exit_code);
}

}  // namespace orch::cli
