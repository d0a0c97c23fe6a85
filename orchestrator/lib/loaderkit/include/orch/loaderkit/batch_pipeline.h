// The batch pipeline the imagefolder and cached loaders share (and an out-of-tree CPU loader can
// use, see examples/out-of-tree-plugin/centercrop.cpp): worker threads that turn samples
// into normalised float images written straight into (pinned) batch tensors, and a bounded
// queue of `prefetch` batches the training loop takes from in order.
//
// Determinism: batch b of the run is batch b % batches_per_epoch of epoch b / batches_per_epoch,
// its samples are fixed by the epoch's order (from seed and epoch), and every sample's crop and
// flip come from (seed, epoch, sample index). Threads only decide who does the work, never what
// it produces, so the batches are the same for any number of workers.
//
// Header-only, compiled into each loader plugin (plugins cannot share a LibTorch library).
#pragma once

#include <orch/data_loader.h>
#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/parallel.h>
#include <orch/imagedata/resample.h>
#include <orch/imagedata/sample_random.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "orch/loaderkit/epoch_schedule.h"
#include "orch/loaderkit/loader_params.h"

namespace orch::loaderkit {

/// Where samples come from: a JPEG folder, a cache.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual std::int64_t size() const = 0;
  virtual std::int32_t label(std::int64_t index) const = 0;
  /// Writes sample `index`'s augmented out_size x out_size RGB (HWC) into `out`; adds the bytes
  /// it read to `bytes`. Throws std::exception with `where: what is wrong` on a bad sample (an
  /// imagedata::DatasetError carries the reason on_error: skip counts it under).
  virtual void load(std::int64_t index, imagedata::SampleRng& rng, int out_size, std::uint8_t* out,
                    std::uint64_t& bytes) const = 0;
  /// Files left out before loading began (a folder scan's skips), by reason.
  virtual std::map<std::string, std::int64_t> skipped_at_start() const { return {}; }
};

/// The reason a load failure is counted under: the DatasetError's, else "other".
inline std::string skip_reason(const std::exception& e) {
  if (const auto* d = dynamic_cast<const imagedata::DatasetError*>(&e)) return d->reason();
  return imagedata::kReasonOther;
}

/// `skipped.<reason>` counters: files skipped, by reason (dataset_error.h's words).
inline void add_skip_counters(std::map<std::string, double>& out,
                              const std::map<std::string, std::int64_t>& by_reason) {
  for (const auto& [reason, n] : by_reason) out["skipped." + reason] += static_cast<double>(n);
}

/// Every field is set by PipelineLoader from the run and the loader's parameters, whose defaults
/// only the schema states (loader_params.h); the zeros here say nothing of them.
struct PipelineOptions {
  std::int64_t batch_size = 0;
  int image_size = 0;
  int workers = 0;
  int prefetch = 0;
  bool shuffle = false;
  bool drop_last = false;
  bool pin_memory = false;  ///< already false when there is no CUDA device
  bool channels_last = false;
  bool skip_errors = false;
  std::uint64_t seed = 0;
};

class BatchPipeline {
 public:
  BatchPipeline(std::unique_ptr<SampleSource> source, const PipelineOptions& o)
      : source_(std::move(source)),
        o_(o),
        n_(source_->size()),
        schedule_(n_, o.batch_size, o.drop_last, o.shuffle, o.seed),
        slots_(static_cast<std::size_t>(o.prefetch)),
        skipped_by_reason_(source_->skipped_at_start()) {
    for (const auto& [reason, n] : skipped_by_reason_) skipped_ += n;
    for (int t = 0; t < o_.workers; ++t) threads_.emplace_back([this] { work(); });
  }

  ~BatchPipeline() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    space_.notify_all();
    for (auto& t : threads_) t.join();
  }

  Batch next() {
    std::unique_lock<std::mutex> lock(m_);
    Slot& s = slot(consumed_);
    auto ready = [&] { return s.batch == consumed_ && s.done == s.count; };
    if (!ready()) {
      ++queue_empty_waits_;
      const auto t0 = std::chrono::steady_clock::now();
      ready_.wait(lock, [&] { return ready() || error_.has_value(); });
      queue_wait_ms_ += ms_since(t0);
      if (!ready()) throw std::runtime_error(*error_);
    }
    Batch out{std::move(s.images), std::move(s.labels)};
    s.batch = -1;
    ++consumed_;
    lock.unlock();
    space_.notify_all();
    return out;
  }

  std::map<std::string, double> counters() const {
    std::lock_guard<std::mutex> lock(m_);
    std::map<std::string, double> out = {
        {"decode_ms", static_cast<double>(decode_us_.load()) / 1000.0},
        {"bytes_read", static_cast<double>(bytes_read_.load())},
        {"images", static_cast<double>(images_.load())},
        {"skipped", static_cast<double>(skipped_.load())},
        {"queue_empty_waits", static_cast<double>(queue_empty_waits_)},
        {"queue_wait_ms", queue_wait_ms_},
        {"workers", static_cast<double>(o_.workers)},
        {"pinned", o_.pin_memory ? 1.0 : 0.0}};
    add_skip_counters(out, skipped_by_reason_);
    return out;
  }

 private:
  struct Slot {
    std::int64_t batch = -1;
    std::int64_t count = 0, done = 0;
    torch::Tensor images, labels;
  };

  static double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  Slot& slot(std::int64_t batch) { return slots_[static_cast<std::size_t>(batch % o_.prefetch)]; }

  // One sample a worker took on: its place in batch `batch` and the sample that fills it.
  struct Claim {
    std::int64_t batch = 0, index = 0;
    float* images = nullptr;
    std::int64_t* labels = nullptr;
  };

  // Allocates slot `s`'s tensors for batch `b`, by the first worker to claim a sample of it.
  void start_batch(Slot& s, std::int64_t b) {
    const int size = o_.image_size;
    s.batch = b;
    s.count = schedule_.count(b);
    s.done = 0;
    auto opts = torch::TensorOptions().pinned_memory(o_.pin_memory);
    s.images = torch::empty({s.count, 3, size, size},
                            opts.dtype(torch::kFloat32)
                                .memory_format(o_.channels_last ? at::MemoryFormat::ChannelsLast
                                                                : at::MemoryFormat::Contiguous));
    s.labels = torch::empty({s.count}, opts.dtype(torch::kInt64));
  }

  // Waits until the next sample's batch fits in the queue and claims it; nothing once stopped.
  std::optional<Claim> claim_next() {
    const int size = o_.image_size;
    std::unique_lock<std::mutex> lock(m_);
    space_.wait(lock, [&] { return stop_ || claim_batch_ < consumed_ + o_.prefetch; });
    if (stop_) return std::nullopt;
    Claim c;
    c.batch = claim_batch_;
    const std::int64_t i = claim_index_;
    Slot& s = slot(c.batch);
    if (i == 0) start_batch(s, c.batch);
    if (++claim_index_ == s.count) {
      ++claim_batch_;
      claim_index_ = 0;
    }
    c.index = schedule_.sample(c.batch, i);  // m_ held: the schedule is not thread-safe
    c.images = s.images.data_ptr<float>() + i * 3 * size * size;
    c.labels = s.labels.data_ptr<std::int64_t>() + i;
    return c;
  }

  // Loads the claimed sample into `rgb` and its label; the error that must stop the run, if
  // any. With on_error: skip, a bad sample's place goes to the next readable one of the dataset.
  std::optional<std::string> load_sample(const Claim& c, std::uint64_t epoch,
                                         std::vector<std::uint8_t>& rgb, std::uint64_t& bytes) {
    for (std::int64_t tries = 0;; ++tries) {
      const std::int64_t k = (c.index + tries) % n_;
      imagedata::SampleRng rng =
          imagedata::SampleRng::for_sample(o_.seed, epoch, static_cast<std::uint64_t>(k));
      try {
        source_->load(k, rng, o_.image_size, rgb.data(), bytes);
        *c.labels = source_->label(k);
        return std::nullopt;
      } catch (const std::exception& e) {
        if (!o_.skip_errors) return e.what();
        ++skipped_;
        {
          std::lock_guard<std::mutex> lock(m_);
          ++skipped_by_reason_[skip_reason(e)];
        }
        if (tries + 1 >= n_)
          return std::string("every image failed to load; the last: ") + e.what();
      }
    }
  }

  // Counts the sample into its batch, or records the first failure and stops every worker.
  void finish_sample(std::int64_t b, const std::optional<std::string>& failure) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (failure) {
        if (!error_) error_ = *failure;
        stop_ = true;
      } else {
        ++images_;
        ++slot(b).done;
      }
    }
    ready_.notify_all();
    if (failure) space_.notify_all();
  }

  void work() {
    const int size = o_.image_size;
    std::vector<std::uint8_t> rgb(static_cast<std::size_t>(size) * size * 3);
    for (;;) {
      const std::optional<Claim> c = claim_next();
      if (!c) return;
      const auto epoch = static_cast<std::uint64_t>(schedule_.epoch_of(c->batch));
      const auto t0 = std::chrono::steady_clock::now();
      std::uint64_t bytes = 0;
      const std::optional<std::string> failure = load_sample(*c, epoch, rgb, bytes);
      if (!failure)
        imagedata::normalize_imagenet(rgb.data(), size, size, o_.channels_last, c->images);
      decode_us_ += static_cast<std::int64_t>(ms_since(t0) * 1000.0);
      bytes_read_ += bytes;
      finish_sample(c->batch, failure);
      if (failure) return;
    }
  }

  std::unique_ptr<SampleSource> source_;
  PipelineOptions o_;
  std::int64_t n_;
  EpochSchedule schedule_;  // used with m_ held

  mutable std::mutex m_;
  std::condition_variable space_, ready_;
  std::vector<Slot> slots_;
  bool stop_ = false;
  std::optional<std::string> error_;
  std::int64_t claim_batch_ = 0, claim_index_ = 0, consumed_ = 0;
  std::map<std::string, std::int64_t> skipped_by_reason_;  // with m_ held

  std::atomic<std::int64_t> decode_us_{0}, images_{0}, skipped_{0};
  std::atomic<std::uint64_t> bytes_read_{0};
  std::int64_t queue_empty_waits_ = 0;
  double queue_wait_ms_ = 0;

  std::vector<std::thread> threads_;  // last: started after everything above exists
};

/// `workers: 0` means imagedata::default_workers(): min(16, cores - 2), at least 1.
inline int resolve_workers(std::int64_t requested) {
  return requested > 0 ? static_cast<int>(requested) : imagedata::default_workers();
}

/// A DataLoader over a BatchPipeline: the loaders differ only in their SampleSource.
class PipelineLoader : public DataLoader {
 public:
  /// `skip_errors`: on_error: skip (loaders without that parameter pass false).
  PipelineLoader(std::unique_ptr<SampleSource> source, std::int64_t classes, const Params& p,
                 const LoaderContext& ctx, bool skip_errors)
      : size_(p.get_int("image_size")), classes_(classes) {
    PipelineOptions o;
    o.batch_size = ctx.batch_size;
    o.image_size = static_cast<int>(size_);
    o.workers = resolve_workers(p.get_int("workers"));
    o.prefetch = static_cast<int>(p.get_int("prefetch"));
    o.shuffle = p.get_bool("shuffle");
    o.drop_last = p.get_bool("drop_last");
    o.pin_memory = p.get_bool("pin_memory") && ctx.device.is_cuda();
    o.channels_last = ctx.channels_last;
    o.skip_errors = skip_errors;
    o.seed = static_cast<std::uint64_t>(ctx.seed);
    pipeline_ = std::make_unique<BatchPipeline>(std::move(source), o);
  }
  std::vector<std::int64_t> sample_shape() const override { return {3, size_, size_}; }
  std::int64_t num_classes() const override { return classes_; }
  Batch next() override { return pipeline_->next(); }
  std::map<std::string, double> counters() const override { return pipeline_->counters(); }

 private:
  std::int64_t size_, classes_;
  std::unique_ptr<BatchPipeline> pipeline_;
};

}  // namespace orch::loaderkit
