// The `nvjpeg` data loader: an ImageNet-layout JPEG folder decoded on the GPU. CPU threads only
// read files and their headers; nvJPEG decodes each batch in one call, and one kernel of ours
// crops, flips and normalises straight into the batch tensor on the device. The design
// decisions (decoders, output, the CPU fallback, cpu_share, hw_preallocate) and the
// measurements behind their defaults are in docs/plugins.md, section `nvjpeg`.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <orch/data_loader.h>
#include <orch/imagedata/image_folder.h>
#include <orch/kernel_image.h>
#include <orch/loaderkit/batch_pipeline.h>
#include <orch/loaderkit/epoch_schedule.h>
#include <torch/torch.h>

#include <condition_variable>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "crop_resize.h"
#include "device_batch.h"
#include "host_batch.h"
#include "nvjpeg_decoder.h"
#include "options.h"
#include "plugin_schemas.h"
#include "torch_allocator.h"

namespace orch::nvjpeg_loader {
namespace {

// The crop kernel where the GPU can run it (<orch/kernel_image.h>); where it cannot (a build
// without an image or PTX for it), every image is decoded and cropped on the CPU, as cpu_share
// 1 does: the same pixels, more slowly, counted as crop_kernel_unavailable.<reason>.
void fall_back_without_crop_kernel(Options& o, int device) {
  static KernelImageCache images(&nvjpeg::crop_resize_attributes);
  const KernelImage& image = images.get(device);
  if (image.runnable) return;
  o.crop_unavailable = image.reason;
  o.cpu_share = 1.0;
  o.hw_preallocate = false;
  std::cerr << "nvjpeg: the crop kernel cannot run on this GPU (" << image.detail
            << "), so every image is decoded on the CPU (counted as crop_kernel_unavailable."
            << image.reason << ")\n";
}

// One producer thread's own decoder state, stream and copy of the epoch order; it makes the
// batches first, first + step, first + 2 step, ...
struct Producer {
  std::unique_ptr<nvjpeg::Decoder> decoder;
  std::optional<c10::cuda::CUDAStream> stream;
  std::optional<loaderkit::EpochSchedule> schedule;  // not thread-safe (caches an epoch's order)
  std::int64_t first = 0;
  std::thread thread;
};

class NvjpegLoader final : public DataLoader {
 public:
  NvjpegLoader(imagedata::FolderIndex index, const Options& o, const std::string& backend,
               c10::Device device)
      : index_(std::move(index)),
        o_(o),
        n_(static_cast<std::int64_t>(index_.samples.size())),
        device_index_(device.has_index() ? device.index() : c10::cuda::current_device()),
        skipped_by_reason_(o.skipped_at_start) {
    for (const auto& [reason, n] : skipped_by_reason_) skipped_ += n;
    c10::cuda::CUDAGuard guard(device_index_);
    for (int k = 0; k < o_.decoders; ++k) {
      auto p = std::make_unique<Producer>();
      // The hint: the batch's GPU rows at ImageNet's usual sizes (most are at most 500 pixels
      // a side); a larger image grows the buffers once.
      nvjpeg::Preallocation pre;
      if (o_.hw_preallocate) {
        const auto rows = static_cast<std::size_t>(o_.batch_size);
        pre = {static_cast<int>(rows - cpu_rows(rows, o_.cpu_share)), 512, 512};
      }
      // Fails here, before any step, when the backend is not usable.
      p->decoder = std::make_unique<nvjpeg::Decoder>(
          backend, o_.torch_allocator ? torch_device_allocator() : nullptr,
          o_.yuv ? nvjpeg::Output::kYuv : nvjpeg::Output::kRgbi, o_.hw_pipeline, pre);
      // High priority: the GPU's block scheduler then starts this stream's few small kernels
      // and copies ahead of the training kernels queued at normal priority, so a batch is not
      // made late by waiting behind the step it is meant to feed.
      p->stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/true, device_index_);
      p->schedule.emplace(n_, o.batch_size, o.drop_last, o.shuffle, o.seed);
      p->first = k;
      producers_.push_back(std::move(p));
    }
    // Started once all exist: a failing constructor above leaves no thread to join.
    for (auto& p : producers_) p->thread = std::thread([this, q = p.get()] { produce(*q); });
  }

  ~NvjpegLoader() override {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    space_.notify_all();
    for (auto& p : producers_) p->thread.join();
    // Queued batches are freed after their work is done; nothing else runs on the streams.
    for (auto& p : producers_) p->stream->synchronize();
  }

  std::vector<std::int64_t> sample_shape() const override {
    return {3, o_.image_size, o_.image_size};
  }
  std::int64_t num_classes() const override {
    return static_cast<std::int64_t>(index_.classes.size());
  }

  Batch next() override {
    std::unique_lock<std::mutex> lock(m_);
    const auto have_next = [&] { return queue_.count(next_) > 0; };
    if (!have_next() && !error_) {
      ++queue_empty_waits_;
      const auto t0 = Clock::now();
      ready_.wait(lock, [&] { return have_next() || error_.has_value(); });
      queue_wait_ms_ += ms_since(t0);
    }
    if (!have_next()) throw std::runtime_error(*error_);
    auto node = queue_.extract(next_++);
    std::unique_ptr<DeviceBatch> b = std::move(node.mapped());
    lock.unlock();
    space_.notify_all();
    // The training stream waits for the batch on the device, and the caching allocator learns
    // that the batch is used there, so its memory is not handed out again too early.
    auto current = c10::cuda::getCurrentCUDAStream(device_index_);
    b->ready.block(current);
    b->images.record_stream(current);
    b->labels.record_stream(current);
    return {b->images, b->labels};
  }

  std::map<std::string, double> counters() const override {
    std::map<std::string, double> out = loader_counters();
    if (!o_.crop_unavailable.empty()) out["crop_kernel_unavailable." + o_.crop_unavailable] = 1;
    return out;
  }

 private:
  std::map<std::string, double> loader_counters() const {
    std::lock_guard<std::mutex> lock(m_);
    const nvjpeg::Decoder::Times t = decoder_times();
    std::map<std::string, double> out = {
        {"decode_ms", decode_ms_},
        {"decode_nvjpeg_ms", nvjpeg_ms_},
        {"decode_gpu_wait_ms", gpu_wait_ms_},
        {"read_ms", read_ms_},
        {"bytes_read", static_cast<double>(bytes_read_)},
        {"images", static_cast<double>(images_)},
        {"skipped", static_cast<double>(skipped_)},
        {"queue_empty_waits", static_cast<double>(queue_empty_waits_)},
        {"queue_wait_ms", queue_wait_ms_},
        {"workers", static_cast<double>(o_.workers)},
        {"decoders", static_cast<double>(o_.decoders)},
        {"hardware_decode", producers_.front()->decoder->hardware() ? 1.0 : 0.0},
        {"hw_engines", static_cast<double>(producers_.front()->decoder->hardware_engines())},
        {"cpu_decodes", static_cast<double>(cpu_decodes_)},
        {"cpu_decode_ms", cpu_decode_ms_},
        {"single_decodes", static_cast<double>(single_decodes())},
        {"decode_nvjpeg_check_ms", t.check_ms},
        {"decode_nvjpeg_batched_ms", t.batched_ms},
        {"decode_nvjpeg_single_ms", t.single_ms},
        {"cpu_fallback", static_cast<double>(cpu_fallback_)}};
    for (const auto& [kind, n] : fallback_kinds_)
      out["cpu_fallback." + kind] = static_cast<double>(n);
    loaderkit::add_skip_counters(out, skipped_by_reason_);
    return out;
  }

 private:
  std::int64_t single_decodes() const {
    std::int64_t n = 0;
    for (const auto& p : producers_) n += p->decoder->single_decodes();
    return n;
  }
  // decode_nvjpeg_ms split by the decoders themselves, summed over producers.
  nvjpeg::Decoder::Times decoder_times() const {
    nvjpeg::Decoder::Times t;
    for (const auto& p : producers_) {
      const auto d = p->decoder->times();
      t.check_ms += d.check_ms;
      t.batched_ms += d.batched_ms;
      t.single_ms += d.single_ms;
    }
    return t;
  }

  // Sample indices of batch b in its epoch's order (the same order as the CPU loaders').
  static std::vector<std::int64_t> samples_of(Producer& p, std::int64_t b) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(p.schedule->count(b)));
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = p.schedule->sample(b, static_cast<std::int64_t>(i));
    return out;
  }

  void produce(Producer& p) {
    try {
      c10::cuda::CUDAGuard guard(device_index_);
      c10::cuda::CUDAStreamGuard stream_guard(*p.stream);
      const std::int64_t step = o_.decoders;
      const auto start_reading = [&](std::int64_t b) {
        return std::async(std::launch::async, [this, &p, b, s = samples_of(p, b)]() mutable {
          const auto epoch = static_cast<std::uint64_t>(p.schedule->epoch_of(b));
          return read_host_batch(index_, o_, *p.decoder, epoch, std::move(s));
        });
      };
      auto reading = start_reading(p.first);
      for (std::int64_t b = p.first;; b += step) {
        {
          std::unique_lock<std::mutex> lock(m_);
          // At most `prefetch` batches made ahead of the one the loop takes next.
          space_.wait(lock, [&] { return stop_ || b < next_ + o_.prefetch; });
          if (stop_) return;
        }
        const auto t_read = Clock::now();
        HostBatch h = reading.get();
        const double waited_for_files = ms_since(t_read);
        reading = start_reading(b + step);
        const auto t0 = Clock::now();
        DecodeTimes times;
        std::unique_ptr<DeviceBatch> d =
            decode_on_device(index_, o_, *p.decoder, *p.stream, h, times);
        const double decode_ms = ms_since(t0);
        {
          std::lock_guard<std::mutex> lock(m_);
          queue_.emplace(b, std::move(d));
          decode_ms_ += decode_ms;
          nvjpeg_ms_ += times.nvjpeg_ms;
          gpu_wait_ms_ += times.gpu_wait_ms;
          read_ms_ += waited_for_files;
          bytes_read_ += h.bytes_read;
          images_ += static_cast<std::int64_t>(h.samples.size());
          cpu_decodes_ += static_cast<std::int64_t>(h.samples.size() - h.gpu_count);
          cpu_decode_ms_ += h.cpu_decode_ms;
          skipped_ += h.skipped;
          for (const auto& [reason, n] : h.skipped_by_reason) skipped_by_reason_[reason] += n;
          for (const auto& [kind, n] : h.fallback_kinds) {
            fallback_kinds_[kind] += n;
            cpu_fallback_ += n;
          }
        }
        ready_.notify_all();
      }
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lock(m_);
        error_ = e.what();
      }
      ready_.notify_all();
    }
  }

  imagedata::FolderIndex index_;
  Options o_;
  std::int64_t n_;
  c10::DeviceIndex device_index_;

  mutable std::mutex m_;
  std::condition_variable space_, ready_;
  std::map<std::int64_t, std::unique_ptr<DeviceBatch>> queue_;  // made batches, by number
  std::int64_t next_ = 0;                                       // the batch next() returns
  bool stop_ = false;
  std::optional<std::string> error_;
  double decode_ms_ = 0, nvjpeg_ms_ = 0, gpu_wait_ms_ = 0, read_ms_ = 0, queue_wait_ms_ = 0;
  double cpu_decode_ms_ = 0;
  std::uint64_t bytes_read_ = 0;
  std::int64_t images_ = 0, skipped_ = 0, queue_empty_waits_ = 0, cpu_decodes_ = 0;
  std::map<std::string, std::int64_t> skipped_by_reason_, fallback_kinds_;
  std::int64_t cpu_fallback_ = 0;
  std::vector<std::unique_ptr<Producer>> producers_;  // last: threads use everything above
};

// What the folder scan would refuse, found when the experiment is planned (a device without
// CUDA is the host's check: the schema declares needs_cuda).
std::vector<PlanProblem> check_plan(const PlanCheckInput& in) {
  const std::string root = in.text("data.root");
  if (root.empty()) {
    return {{{"data.root", "data"},
             "data.root is not set: give the dataset folder (DIR/train/<class>/*.JPEG)",
             "a folder of class folders of JPEG files"}};
  }
  if (in.on_this_machine) {
    if (std::string why = imagedata::image_folder_problem(root); !why.empty()) {
      return {{{"data.root"}, why, "a folder of class folders of JPEG files"}};
    }
  }
  return {};
}

class NvjpegPlugin final : public DataLoaderPlugin {
 public:
  PluginInfo info() const override {
    PluginInfo i = plugin_schemas::nvjpeg();
    i.check = check_plan;
    return i;
  }

  // The host has checked that the run's device is CUDA (the schema's needs_cuda).
  std::unique_ptr<DataLoader> create(const Params& p, const LoaderContext& ctx) const override {
    const std::string& root = p.get_string("root");
    if (root.empty())
      throw std::invalid_argument(
          "data.root is not set: give the dataset folder (DIR/train/<class>/*.JPEG), e.g. "
          "data: {plugin: nvjpeg, root: /data/imagenet}");
    Options o;
    o.image_size = static_cast<int>(p.get_int("image_size"));
    o.workers = static_cast<int>(p.get_int("workers"));
    o.prefetch = static_cast<int>(p.get_int("prefetch"));
    o.decoders = static_cast<int>(p.get_int("decoders"));
    o.torch_allocator = p.get_string("allocator") == "torch";
    o.yuv = p.get_string("output") == "yuv";
    o.hw_pipeline = p.get_bool("hw_pipeline");
    o.cpu_share = p.get_float("cpu_share");
    o.hw_preallocate = p.get_bool("hw_preallocate");
    o.shuffle = p.get_bool("shuffle");
    o.drop_last = p.get_bool("drop_last");
    o.skip_errors = p.get_string("on_error") == "skip";
    o.channels_last = ctx.channels_last;
    o.seed = static_cast<std::uint64_t>(ctx.seed);
    o.batch_size = ctx.batch_size;
    fall_back_without_crop_kernel(
        o, ctx.device.has_index() ? ctx.device.index() : c10::cuda::current_device());
    imagedata::ScanOptions scan;
    scan.split = p.get_string("split");
    scan.skip_errors = o.skip_errors;
    imagedata::FolderIndex index = imagedata::scan_image_folder(root, scan);
    // Into the run's log: which files the counters' skips were.
    for (const auto& s : index.skipped) std::cerr << "orch: data: skipped " << s.message << "\n";
    o.skipped_at_start = index.skipped_by_reason();
    return std::make_unique<NvjpegLoader>(std::move(index), o, p.get_string("backend"), ctx.device);
  }
};

}  // namespace
}  // namespace orch::nvjpeg_loader

ORCH_PLUGIN(orch::nvjpeg_loader::NvjpegPlugin)
