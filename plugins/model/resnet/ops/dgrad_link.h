// The resnet option `dgrad_graph`: the backward of conv_{i+1}(relu(bn_i(x) [+ residual])) as one
// cuDNN graph (dgrad_relu_dbn_graph.h) instead of conv_{i+1}'s data gradient followed by our
// batch-norm backward, on the shapes where it does not measure slower.
//
// Autograd sees two nodes: the convolution (ConvStatsFunction, conv_bn_from_stats.cpp) and the
// batch-norm before it (FusedBnReluFunction, fused_bn.cpp). They meet through a DgradLink, as
// conv1 and bn3 meet through a ResidualGradSink (residual_grad.h): the batch-norm's forward
// offers its output with a link; the convolution that takes that output as its input claims
// it. In the backward, the convolution computes only its weight gradient and leaves its output
// gradient, filter, stride and padding in the link; the batch-norm's backward, which autograd
// runs next (it depends on the convolution's), computes the data gradient together with its own
// backward. Any other gradient its output receives (the next block's shortcut) reaches it
// through autograd as usual and becomes the graph's shortcut gradient.
//
// Per shape, the first backward decides (`dgrad_graph: auto`): it builds the graph (cuDNN's
// fastest plan) and times it against the separate path (ATen's data gradient, then our kernels) on
// the same arguments, and keeps the graph unless it is more than kDgradGraphTieTolerance slower
// (timed alone, the graph misses what it saves inside a step: the data gradient's write and
// re-read, and two launches; end to end, `always` measured at least as fast as a strict
// choice). `always` skips the timing, to measure the
// graph everywhere cuDNN takes it); cuDNN's refusals (bf16 on sm90, shapes without an engine)
// keep the separate path. Both decisions are remembered per shape and thread and counted. A
// backward under CUDA graph capture never decides (timing synchronises): it runs the separate path
// for a shape it has not seen, which the warm-up steps before a capture make rare.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace orch::resnet {

/// What the convolution's backward leaves for the batch-norm's.
struct DgradLink : torch::CustomClassHolder {
  bool always = false;  ///< the graph wherever cuDNN takes it, untimed (`dgrad_graph: always`)
  torch::Tensor dy;     ///< the convolution's output gradient (x's dtype, channels-last)
  torch::Tensor w;      ///< its filter in x's dtype, channels-last
  std::int64_t stride = 1, padding = 0;
};
using DgradLinkPtr = c10::intrusive_ptr<DgradLink>;

/// How much slower than the separate path, timed alone, a shape's graph may be and still be
/// taken under `auto` (dgrad_link.cpp says why a near tie goes to the graph).
inline constexpr double kDgradGraphTieTolerance = 0.05;

/// The resnet option `dgrad_graph`.
enum class DgradGraphMode {
  kOff,     ///< the separate backward everywhere
  kAuto,    ///< the graph on the shapes where it does not time clearly slower
  kAlways,  ///< the graph wherever cuDNN takes it
};
/// "off", "auto" or "always"; throws std::invalid_argument naming the allowed values otherwise.
DgradGraphMode dgrad_graph_mode_from_string(const std::string& name);
const char* to_string(DgradGraphMode mode);

/// While one lives, fused batch-norms from a convolution's statistics on this thread offer
/// their outputs for linking (unless kOff); leaving the scope drops an offer not claimed.
/// Nests; restores the previous mode.
class DgradGraphScope {
 public:
  explicit DgradGraphScope(DgradGraphMode mode);
  ~DgradGraphScope();
  DgradGraphScope(const DgradGraphScope&) = delete;
  DgradGraphScope& operator=(const DgradGraphScope&) = delete;

 private:
  DgradGraphMode previous_;
};

/// The mode of the innermost DgradGraphScope on this thread (kOff without one).
DgradGraphMode dgrad_graph_mode();

/// The batch-norm's side, after its fused forward saved `link`: `y` (its output) may be claimed.
/// One offer at a time per thread; a new one replaces the last.
void offer_dgrad_link(const torch::Tensor& y, const DgradLinkPtr& link);

/// The convolution's side: the link offered with exactly this tensor (same storage, offset,
/// sizes), which is then no longer on offer; null otherwise.
DgradLinkPtr claim_dgrad_link(const torch::Tensor& x);

/// The link a custom function's forward stored as ctx->saved_data["dgrad_link"], or null.
DgradLinkPtr saved_dgrad_link(torch::autograd::AutogradContext& ctx);
void save_dgrad_link(torch::autograd::AutogradContext& ctx, const DgradLinkPtr& link);

/// The batch-norm's gradients, as FusedBnReluFunction's backward returns them.
struct BnGrads {
  torch::Tensor dx;    ///< the batch-norm's input gradient
  torch::Tensor dres;  ///< the residual's gradient (undefined without a residual)
  torch::Tensor grad_weight, grad_bias;
};

/// What the batch-norm's backward knows, for linked_bn_backward.
struct LinkedBnInputs {
  torch::Tensor x;                       ///< the batch-norm's input
  torch::Tensor save_mean, save_invstd;  ///< the forward's statistics, fp32
  torch::Tensor weight, bias;            ///< the batch-norm's scale and shift, fp32
  torch::Tensor residual;                ///< the forward's residual, or undefined
  torch::Tensor grad_out;  ///< what else the output received through autograd, or undefined
};

/// The batch-norm's backward with the next convolution's data gradient waiting in `link`: the
/// graph where this shape decided for it, otherwise ATen's data gradient (+ grad_out) handed to
/// `separate`, the batch-norm's own backward given its output's full gradient.
BnGrads linked_bn_backward(const DgradLink& link, const LinkedBnInputs& in,
                           const std::function<BnGrads(const torch::Tensor& grad_y)>& separate);

/// Calls of linked_bn_backward by path, in this copy of the library.
struct DgradGraphCounters {
  std::int64_t graph = 0;    ///< ran the fused graph
  std::int64_t slower = 0;   ///< the separate path: the graph timed slower on this shape
  std::int64_t refused = 0;  ///< the separate path: cuDNN refused the shape or dtype
  std::int64_t capture = 0;  ///< the separate path: an undecided shape under graph capture
  std::int64_t offered = 0;  ///< forwards that offered a link
  std::int64_t claimed = 0;  ///< convolutions that claimed one
};
DgradGraphCounters dgrad_graph_counters();

/// One shape's decision, for benchmarks and the GPU tests to print.
struct DgradGraphDecision {
  std::string shape;     ///< "bn N x C x H x W <- conv K x RxS / stride [+ shortcut] [+ residual]"
  bool graph = false;    ///< whether the graph runs
  double graph_ms = -1;  ///< its time (median of the timed calls), -1 where refused
  double separate_ms = -1;  ///< the separate path's time, -1 where not timed
  std::string why;          ///< cuDNN's refusal or the chosen plan
};
/// The decisions made so far in this copy of the library (every thread's), in order.
std::vector<DgradGraphDecision> dgrad_graph_decisions();

}  // namespace orch::resnet
