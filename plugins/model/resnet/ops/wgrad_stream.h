// The resnet option `wgrad_stream`: the weight gradients of the convolutions that compute their
// batch-norm's statistics (conv_bn_from_stats.h) on a second CUDA stream.
//
// Why: in the backward, a convolution's weight gradient is read only by the optimizer, yet on
// one stream it runs between the output gradient and the next batch-norm backward, which waits
// for it for nothing. On a second stream (started after the output gradient is ready, joined
// back to the backward's stream once, when the backward ends) the weight gradient, a
// compute-bound GEMM, can run beside the batch-norm passes, which are bound by memory
// bandwidth. Whether the GPU overlaps them enough to pay is a measurement
// (docs/benchmarks.md), hence an option, off by default.
//
// The gradient lands in the weight's `.grad` directly, in the weight's dtype and layout, summed
// onto a gradient already there, as autograd's AccumulateGrad would leave it; the autograd
// function returns no gradient for the weight. The join is an autograd final callback (as
// DistributedDataParallel's), which the engine runs on the stream that called backward(), so
// the optimizer and anything after the backward see every gradient. Under CUDA graph capture
// the second stream joins the capture through the same events.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace orch::resnet {

/// While one lives, convolutions with statistics whose forward runs on this thread put their
/// weight gradients on the second stream (CUDA only). Nests; restores the previous setting.
class WgradStreamScope {
 public:
  explicit WgradStreamScope(bool enabled);
  ~WgradStreamScope();
  WgradStreamScope(const WgradStreamScope&) = delete;
  WgradStreamScope& operator=(const WgradStreamScope&) = delete;

 private:
  bool previous_;
};

/// The innermost WgradStreamScope's setting on this thread (false without one).
bool wgrad_stream_enabled();

/// Inside an autograd backward, on CUDA: weight.grad += the weight gradient of
/// y = conv2d(x, w, stride, padding) for output gradient dy, computed on this device's second
/// stream after what the current stream has queued so far; the current stream waits for it when
/// this backward ends. `w` is the filter as the forward used it (x's dtype); `weight` the
/// parameter whose .grad receives the gradient in its own dtype. dy, x and w stay allocated
/// until the second stream has read them.
void weight_grad_on_second_stream(const torch::Tensor& dy, const torch::Tensor& x,
                                  const torch::Tensor& w, const torch::Tensor& weight,
                                  std::int64_t stride, std::int64_t padding);

/// Counts in this copy of the library: weight gradients put on the second stream, and the joins
/// (one per backward that put any there).
struct WgradStreamCounters {
  std::int64_t launched = 0;
  std::int64_t joined = 0;
};
WgradStreamCounters wgrad_stream_counters();

}  // namespace orch::resnet
