// The `copy-overlap` stream strategy: while step N computes, batch N+1 is already being copied
// host->device on a dedicated copy stream (from pinned memory, so the copy is truly
// asynchronous). The compute stream waits on an event recorded after the copy, never on the
// host. This is the article's "use more streams" advice where it actually applies: hiding
// PCIe transfers behind compute. On the CPU there is nothing to overlap; it runs in order.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <orch/nvtx.h>
#include <orch/stream_strategy.h>

#include <chrono>
#include <optional>

#include "plugin_schemas.h"

namespace orch::copy_overlap {
namespace {

using Clock = std::chrono::steady_clock;

class CopyOverlap final : public StreamStrategy {
 public:
  explicit CopyOverlap(const StrategyContext& ctx) : device_(ctx.device) {
    if (device_.is_cuda()) copy_stream_ = c10::cuda::getStreamFromPool(false, device_.index());
  }

  StepResult step(StepFunctions& fns) override {
    StepResult r;
    if (!copy_stream_) {  // CPU: nothing to overlap
      const auto t0 = Clock::now();
      Batch host = fns.next_batch();
      r.data_wait_ms = ms_since(t0);
      r.loss = fns.train_step(fns.to_device(host, false));
      return r;
    }
    if (!next_) r.data_wait_ms += prefetch(fns);  // first step: nothing in flight yet
    // The batch copied during the previous step; compute waits for its copy on the device.
    Batch current = std::move(*next_);
    auto compute = c10::cuda::getCurrentCUDAStream(device_.index());
    copied_.block(compute);
    // The copy stream allocated these tensors; tell the caching allocator they are used on the
    // compute stream so their memory is not reused before the compute finishes.
    current.images.record_stream(compute);
    current.labels.record_stream(compute);
    r.data_wait_ms += prefetch(fns);  // start copying N+1 before N's kernels are queued
    r.loss = fns.train_step(current);
    ++steps_;
    return r;
  }

  std::map<std::string, double> counters() const override {
    return {{"overlapped_copies", static_cast<double>(steps_)}};
  }

 private:
  // Fetches the next batch and queues its copy on the copy stream. Returns the host time spent
  // waiting for the loader.
  double prefetch(StepFunctions& fns) {
    const auto t0 = Clock::now();
    host_next_ = fns.next_batch();  // kept alive: the async copy reads from it
    const double wait = ms_since(t0);
    NvtxRange r("prefetch copy");
    // New device memory for the copy comes from the copy stream's pool; record_stream in
    // step() keeps it from being reused while compute reads it, so no wait is needed here.
    c10::cuda::CUDAStreamGuard guard(*copy_stream_);
    next_ = fns.to_device(host_next_, /*non_blocking=*/true);
    copied_.record(*copy_stream_);
    return wait;
  }

  static double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }

  c10::Device device_;
  std::optional<c10::cuda::CUDAStream> copy_stream_;
  std::optional<Batch> next_;
  Batch host_next_;
  at::cuda::CUDAEvent copied_;
  std::int64_t steps_ = 0;
};

class CopyOverlapPlugin final : public StreamStrategyPlugin {
 public:
  PluginInfo info() const override { return plugin_schemas::copy_overlap(); }
  std::unique_ptr<StreamStrategy> create(const Params&, const StrategyContext& ctx) const override {
    return std::make_unique<CopyOverlap>(ctx);
  }
};

}  // namespace
}  // namespace orch::copy_overlap

ORCH_PLUGIN(orch::copy_overlap::CopyOverlapPlugin)
