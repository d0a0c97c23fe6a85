// The `multi-stream` stream strategy, to test the article's claim that more CUDA streams keep
// more SMs busy. The batch is split into `streams` micro-batches whose forward passes are
// queued on that many streams at once; their mean loss is back-propagated in one backward call
// (autograd runs each branch's backward on the stream its forward used and synchronises the
// gradient accumulation), then one optimizer step. Batch-norm statistics are per micro-batch,
// as in data-parallel training without SyncBatchNorm. On the CPU the micro-batches run in turn.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <orch/nvtx.h>
#include <orch/stream_strategy.h>

#include <chrono>
#include <stdexcept>
#include <vector>

#include "plugin_schemas.h"

namespace orch::multi_stream {
namespace {

using Clock = std::chrono::steady_clock;

class MultiStream final : public StreamStrategy {
 public:
  MultiStream(const Params& p, const StrategyContext& ctx)
      : device_(ctx.device), n_(p.get_int("streams")) {
    if (device_.is_cuda()) {
      for (std::int64_t i = 0; i < n_; ++i) {
        streams_.push_back(c10::cuda::getStreamFromPool(false, device_.index()));
      }
    }
  }

  StepResult step(StepFunctions& fns) override {
    StepResult r;
    const auto t0 = Clock::now();
    Batch host = fns.next_batch();
    r.data_wait_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    Batch batch = fns.to_device(host, /*non_blocking=*/false);
    if (batch.images.size(0) < n_) {
      throw std::invalid_argument("multi-stream: batch of " + std::to_string(batch.images.size(0)) +
                                  " cannot be split into " + std::to_string(n_) + " micro-batches");
    }
    auto images = batch.images.chunk(n_);
    auto labels = batch.labels.chunk(n_);
    fns.zero_grad();
    std::vector<torch::Tensor> losses;
    if (streams_.empty()) {
      for (std::size_t i = 0; i < images.size(); ++i) {
        losses.push_back(fns.forward_loss({images[i], labels[i]}));
      }
    } else {
      auto main = c10::cuda::getCurrentCUDAStream(device_.index());
      at::cuda::CUDAEvent inputs_ready;
      inputs_ready.record(main);
      std::vector<at::cuda::CUDAEvent> done(images.size());
      for (std::size_t i = 0; i < images.size(); ++i) {
        NvtxRange range("micro-batch forward");
        inputs_ready.block(streams_[i]);
        c10::cuda::CUDAStreamGuard guard(streams_[i]);
        losses.push_back(fns.forward_loss({images[i], labels[i]}));
        done[i].record(streams_[i]);
      }
      for (auto& e : done) e.block(main);
    }
    auto loss = torch::stack(losses).mean();
    fns.backward_step(loss);
    r.loss = loss.detach();
    return r;
  }

 private:
  c10::Device device_;
  std::int64_t n_;
  std::vector<c10::cuda::CUDAStream> streams_;
};

// step() refuses a batch smaller than the number of micro-batches; a fixed batch size tells
// already when the experiment is planned (`auto` is checked by the search's first probe).
std::vector<PlanProblem> check_plan(const PlanCheckInput& in) {
  const std::string batch = in.text("batch_size"), streams = in.text("stream.streams");
  if (!batch.empty() && !streams.empty() && std::stoll(batch) < std::stoll(streams)) {
    return {{{"batch_size", "stream.streams", "stream"},
             "a batch of " + batch + " cannot be split into " + streams +
                 " micro-batches (multi-stream)",
             "batch_size >= stream.streams"}};
  }
  return {};
}

class MultiStreamPlugin final : public StreamStrategyPlugin {
 public:
  PluginInfo info() const override {
    PluginInfo i = plugin_schemas::multi_stream();
    i.check = check_plan;
    return i;
  }
  std::unique_ptr<StreamStrategy> create(const Params& p,
                                         const StrategyContext& ctx) const override {
    return std::make_unique<MultiStream>(p, ctx);
  }
};

}  // namespace
}  // namespace orch::multi_stream

ORCH_PLUGIN(orch::multi_stream::MultiStreamPlugin)
