// The `cuda-graph` stream strategy: the whole training step (zero_grad, forward, loss,
// backward, optimizer step, loss scaling included) is captured once into a CUDA graph on
// static input buffers and then replayed, so a step costs one graph launch instead of
// hundreds of kernel launches (the article's launch-latency problem, fixed).
//
// As in PyTorch's whole-network capture recipe, the first `warmup_steps` steps run eagerly on
// the side stream that will capture (lazy initialisation, cuDNN autotuning, per-stream handles
// and optimizer state must not first happen inside the capture); the next step is captured on
// that stream and replayed; each later step copies its batch into the static buffers and
// replays. Every call of step() is exactly one training step, so after N steps the model is
// where the `default` strategy would have left it (tests/gpu check this). Anything in the step that
// synchronises with the host makes the capture fail; the capture is then ended cleanly and the run
// fails with CUDA's reason, never a hang or a corrupted context.
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <orch/nvtx.h>
#include <orch/stream_strategy.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>

#include "plugin_schemas.h"

namespace orch::cuda_graph {
namespace {

using Clock = std::chrono::steady_clock;

class CudaGraph final : public StreamStrategy {
 public:
  CudaGraph(const Params& p, const StrategyContext& ctx)
      : device_(ctx.device), warmup_(p.get_int("warmup_steps")) {
    // A CUDA device: the host creates this plugin only there (the schema's needs_cuda).
    side_ = c10::cuda::getStreamFromPool(false, device_.index());
  }

  StepResult step(StepFunctions& fns) override {
    StepResult r;
    const auto t0 = Clock::now();
    Batch host = fns.next_batch();
    r.data_wait_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (eager_steps_ < warmup_) {
      r.loss = on_side_stream([&] { return fns.train_step(fns.to_device(host, false)); });
      ++eager_steps_;
      return r;
    }
    if (!graph_) {
      // Buffers of the graph's own: to_device returns the loader's tensor itself when it is
      // already on the device, and later copies must not overwrite the loader's data.
      Batch first = fns.to_device(host, /*non_blocking=*/false);
      static_ = {first.images.clone(at::MemoryFormat::Preserve), first.labels.clone()};
      on_side_stream([&] { return capture(fns); });
    } else {
      NvtxRange range("copy into graph inputs");
      // Same shapes every step (drop_last loaders), so the copy reuses the captured buffers.
      static_.images.copy_(host.images, /*non_blocking=*/true);
      static_.labels.copy_(host.labels, /*non_blocking=*/true);
    }
    {
      NvtxRange range("graph replay");
      graph_->replay();
    }
    ++replays_;
    // The captured loss tensor is overwritten by every replay; the host reads losses only
    // after the timed loop, so each step keeps its own (one-element) copy.
    r.loss = static_loss_.clone();
    return r;
  }

  std::map<std::string, double> counters() const override {
    return {{"replays", static_cast<double>(replays_)},
            {"eager_steps", static_cast<double>(eager_steps_)}};
  }

 private:
  // Runs fn on the capture stream, ordered after everything queued on the caller's stream and
  // before anything queued there afterwards (the runner's timing events included).
  template <class Fn>
  torch::Tensor on_side_stream(Fn&& fn) {
    auto caller = c10::cuda::getCurrentCUDAStream(device_.index());
    at::cuda::CUDAEvent before, after;
    before.record(caller);
    before.block(*side_);
    torch::Tensor out;
    {
      c10::cuda::CUDAStreamGuard guard(*side_);
      out = fn();
      after.record(*side_);
    }
    after.block(caller);
    return out;
  }

  torch::Tensor capture(StepFunctions& fns) {
    NvtxRange range("graph capture");
    // Autocast's cast cache would hold tensors across the capture boundary; PyTorch requires
    // it off for graphs. Replays never run host code, so it is restored right after.
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    struct Restore {
      bool cache;
      ~Restore() { at::autocast::set_autocast_cache_enabled(cache); }
    } restore{cache};
    side_->synchronize();
    // The capture allocates from a private pool, and while a capture is underway the caching
    // allocator never frees cached blocks to make room (cudaFree is illegal then): memory the
    // eager steps left cached (cuDNN's autotuning workspaces above all) stays unusable: a
    // ResNet50 at batch 768 failed capture with most of the GPU's memory cached but unallocated.
    // Handing the cache back to the device first lets the capture have it.
    c10::cuda::CUDACachingAllocator::emptyCache();
    // capture_begin puts the device's RNG state into capture mode and only capture_end takes
    // it out; a copy of the state from before lets a failed capture restore it (see
    // abandon_capture).
    at::Generator rng = at::cuda::detail::getDefaultCUDAGenerator(device_.index());
    {
      std::lock_guard<std::mutex> lock(rng.mutex());
      rng_before_capture_ = rng.clone();
    }
    graph_ = std::make_unique<at::cuda::CUDAGraph>();
    try {
      // Thread-local capture mode: only this thread's unsafe CUDA calls break the capture. In
      // the default global mode, a data loader's own threads (nvjpeg's decoders synchronise
      // and allocate) make the capture fail.
      graph_->capture_begin(pool_, cudaStreamCaptureModeThreadLocal);
      static_loss_ = fns.train_step(static_);
      graph_->capture_end();
    } catch (const std::exception& e) {
      abandon_capture();
      throw std::runtime_error(std::string("CUDA graph capture failed: ") + e.what());
    }
    return static_loss_;
  }

  // Ends a capture that failed half-way so the stream (and the CUDA context) stay usable, and
  // clears the sticky capture error. The CUDA generator that capture_begin put in capture mode
  // gets its state from before the capture back: left as it was, every later CUDA random
  // number in the process failed ("Offset increment outside graph capture encountered
  // unexpectedly" when a test drew random numbers after this one).
  void abandon_capture() {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(side_->stream(), &status) == cudaSuccess &&
        status != cudaStreamCaptureStatusNone) {
      cudaGraph_t partial = nullptr;
      if (cudaStreamEndCapture(side_->stream(), &partial) == cudaSuccess && partial) {
        cudaGraphDestroy(partial);
      }
    }
    (void)cudaGetLastError();
    // capture_begin routed this stream's allocations into the graph's private pool; capture_end
    // would have ended that, but it never ran. Without this, later allocations on the stream
    // would keep landing in a pool that nothing replays.
    c10::cuda::CUDACachingAllocator::endAllocateToPool(device_.index(), pool_);
    c10::cuda::CUDACachingAllocator::releasePool(device_.index(), pool_);
    graph_.reset();  // unregisters the graph from the generator state it captured
    if (rng_before_capture_.defined()) {
      at::Generator rng = at::cuda::detail::getDefaultCUDAGenerator(device_.index());
      std::lock_guard<std::mutex> lock(rng.mutex());
      rng.unsafeGetGeneratorImpl()->graphsafe_set_state(rng_before_capture_.getIntrusivePtr());
    }
  }

  c10::Device device_;
  std::int64_t warmup_;
  std::optional<c10::cuda::CUDAStream> side_;  // the capture stream
  std::int64_t eager_steps_ = 0;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  // The capture's private memory pool, named up front so a failed capture can release it
  // (CUDAGraph::pool() refuses to answer without a successful capture).
  at::cuda::MempoolId_t pool_ = at::cuda::graph_pool_handle();
  at::Generator rng_before_capture_;  // a clone of the device RNG, taken just before capture
  Batch static_;
  torch::Tensor static_loss_;
  std::int64_t replays_ = 0;
};

// What the capture would refuse, found when the experiment is planned: fp16's loss scaling with
// the loop or foreach optimizer reads the inf flag on the host every step, which a capture
// cannot contain (the fused optimizer skips the step on the device instead). A device without
// CUDA is the host's check (the schema declares needs_cuda).
std::vector<PlanProblem> check_plan(const PlanCheckInput& in) {
  const std::string impl = in.text("optimizer.impl");
  if (in.text("precision") == "amp" && in.text("precision.dtype") == "fp16" && impl != "fused") {
    return {{{"optimizer.impl", "optimizer", "stream"},
             "fp16 under cuda-graph needs optimizer.impl: fused (the " + impl +
                 " optimizer reads the loss scaler's inf flag on the host, which a graph "
                 "capture cannot contain)",
             "fused"}};
  }
  return {};
}

class CudaGraphPlugin final : public StreamStrategyPlugin {
 public:
  PluginInfo info() const override {
    PluginInfo i = plugin_schemas::cuda_graph();
    i.check = check_plan;
    return i;
  }
  std::unique_ptr<StreamStrategy> create(const Params& p,
                                         const StrategyContext& ctx) const override {
    return std::make_unique<CudaGraph>(p, ctx);
  }
};

}  // namespace
}  // namespace orch::cuda_graph

ORCH_PLUGIN(orch::cuda_graph::CudaGraphPlugin)
