// The `synthetic` data loader: random images and labels made once and served in a cycle. By
// default they live on the run's device: no decode, no copy, the upper bound every real loader
// is compared with. `location: pinned` (or `pageable`) keeps them in host memory instead, so
// the host-to-device copy, and the strategies that hide it, can be measured without any
// decoding cost. `delay_ms` makes it a slow loader on purpose: every batch is handed over
// that much later, on the host, as from a loader that cannot keep up (what the input-bound
// diagnosis is tested with).
#include <orch/data_loader.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "plugin_schemas.h"

namespace orch::synthetic {
namespace {

// The host batches loaders made, kept for a later loader that asks for the same ones. In a warm
// worker (`isolation: worker`) run after run asks for one of a few sets (a matrix's batch sizes
// and layouts, in whatever order its axes give); drawing them again (a serial normal_ over 150 MB
// per batch of 256) was most of a worker run's set-up. Bounded by count and bytes, least
// recently used first out, so a worker's host memory stays bounded whatever the matrix.
struct HostBatchesKey {
  std::int64_t seed, batch, channels, size, classes, batches;
  bool channels_last;
  bool operator==(const HostBatchesKey&) const = default;
};

class HostBatchesCache {
 public:
  static constexpr std::size_t kMaxSets = 8;
  static constexpr std::int64_t kMaxBytes = std::int64_t{2} << 30;

  // The batches for `key`, drawn with `draw` unless a kept set is these; `reused` says which.
  std::vector<Batch> get(const HostBatchesKey& key, const std::function<std::vector<Batch>()>& draw,
                         bool& reused) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(sets_.begin(), sets_.end(), [&](const Set& s) { return s.key == key; });
    reused = it != sets_.end();
    if (reused) {
      sets_.splice(sets_.begin(), sets_, it);  // most recently used first
      return sets_.front().batches;
    }
    Set fresh{key, draw(), 0};
    for (const Batch& b : fresh.batches) fresh.bytes += b.images.nbytes() + b.labels.nbytes();
    sets_.push_front(std::move(fresh));
    std::int64_t total = 0;
    for (const Set& s : sets_) total += s.bytes;
    // The newest set stays even alone over the bound: it is the run's own data.
    while (sets_.size() > 1 && (sets_.size() > kMaxSets || total > kMaxBytes)) {
      total -= sets_.back().bytes;
      sets_.pop_back();
    }
    return sets_.front().batches;
  }

 private:
  struct Set {
    HostBatchesKey key;
    std::vector<Batch> batches;
    std::int64_t bytes;
  };
  std::mutex mutex_;
  std::list<Set> sets_;
};

HostBatchesCache& host_batches_cache() {
  static HostBatchesCache cache;
  return cache;
}

class SyntheticLoader final : public DataLoader {
 public:
  SyntheticLoader(const Params& p, const LoaderContext& ctx)
      : channels_(p.get_int("channels")),
        size_(p.get_int("image_size")),
        classes_(p.get_int("classes")),
        delay_ms_(p.get_float("delay_ms")) {
    const auto n = p.get_int("batches");
    const HostBatchesKey key{static_cast<std::int64_t>(ctx.seed),
                             ctx.batch_size,
                             channels_,
                             size_,
                             classes_,
                             n,
                             ctx.channels_last};
    // A generator of our own makes the data a function of the seed alone, whatever the
    // device (the pinned and device batches are the same numbers); they are drawn on the host
    // and then moved where `location` says.
    auto draw = [&] {
      auto gen = at::detail::createCPUGenerator(static_cast<std::uint64_t>(ctx.seed));
      std::vector<Batch> host;
      host.reserve(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) {
        auto images = at::randn({ctx.batch_size, channels_, size_, size_}, gen, torch::kFloat32);
        if (ctx.channels_last) images = images.contiguous(at::MemoryFormat::ChannelsLast);
        auto labels = at::randint(classes_, {ctx.batch_size}, gen, torch::kInt64);
        host.push_back({images, labels});
      }
      return host;
    };
    const std::vector<Batch> host = host_batches_cache().get(key, draw, reused_);
    const std::string& location = p.get_string("location");
    batches_.reserve(host.size());
    for (const Batch& b : host) {
      if (location == "device") {
        batches_.push_back({b.images.to(ctx.device), b.labels.to(ctx.device)});
      } else if (location == "pinned" && at::hasCUDA()) {
        // Page-locked host memory: the copy to the GPU can be asynchronous (and overlapped).
        batches_.push_back({b.images.pin_memory(), b.labels.pin_memory()});
      } else {
        // Pageable host memory; also `pinned` where there is no CUDA to pin memory for. The
        // cached tensors themselves: nothing writes into a batch.
        batches_.push_back(b);
      }
    }
  }
  std::vector<std::int64_t> sample_shape() const override { return {channels_, size_, size_}; }
  std::int64_t num_classes() const override { return classes_; }
  Batch next() override {
    if (delay_ms_ > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms_));
    }
    const Batch& b = batches_[next_++ % batches_.size()];
    return b;
  }
  // `reused_host_batches`: 1 when this run's batches were kept from an earlier loader in this
  // process (a warm worker's earlier run), not drawn again.
  std::map<std::string, double> counters() const override {
    return {{"reused_host_batches", reused_ ? 1.0 : 0.0}};
  }

 private:
  std::int64_t channels_, size_, classes_;
  double delay_ms_;
  bool reused_ = false;
  std::vector<Batch> batches_;
  std::size_t next_ = 0;
};

class SyntheticPlugin final : public DataLoaderPlugin {
 public:
  PluginInfo info() const override { return plugin_schemas::synthetic(); }
  std::unique_ptr<DataLoader> create(const Params& p, const LoaderContext& ctx) const override {
    return std::make_unique<SyntheticLoader>(p, ctx);
  }
};

}  // namespace
}  // namespace orch::synthetic

ORCH_PLUGIN(orch::synthetic::SyntheticPlugin)
