// The link between a convolution's backward and the fused batch-norm's before it, and the
// per-shape choice between cuDNN's fused graph and the separate path (dgrad_link.h says why).
#include "dgrad_link.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <variant>

#include "dgrad_relu_dbn_graph.h"

#ifdef ORCH_FUSED_BN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <cuda_runtime.h>
#endif

namespace orch::resnet {
namespace {

thread_local DgradGraphMode t_mode = DgradGraphMode::kOff;
// The forward's offer: held strongly, only for the model forward that made it (the scope's end
// drops it), so identity is the TensorImpl itself.
thread_local torch::Tensor t_offered;
thread_local DgradLinkPtr t_offered_link;

std::atomic<std::int64_t> g_graph{0}, g_slower{0}, g_refused{0}, g_capture{0}, g_offered{0},
    g_claimed{0};

std::mutex g_decisions_mu;
std::vector<DgradGraphDecision> g_decisions;

const auto kCl = at::MemoryFormat::ChannelsLast;

/// Says once per distinct reason why a shape keeps the separate path.
void note_refusal(const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> said;
  const std::lock_guard<std::mutex> lock(mu);
  if (said.insert(why).second)
    std::cerr << "dgrad_graph: " << why
              << "; the separate data gradient and batch-norm backward run there "
                 "(the counter dgrad_graph.refused counts each such call)\n";
}

torch::Tensor data_gradient(const DgradLink& l, const torch::Tensor& x) {
  // x stands in for the convolution's input: the batch-norm's input has its sizes, dtype and
  // layout, and the data gradient reads nothing else of it.
  const std::array<bool, 3> mask = {true, false, false};
  return std::get<0>(at::convolution_backward(l.dy, x, l.w, std::nullopt, {l.stride, l.stride},
                                              {l.padding, l.padding}, {1, 1}, false, {0, 0}, 1,
                                              mask));
}

bool aligned16(std::initializer_list<torch::Tensor> tensors) {
  for (const auto& t : tensors)
    if (t.defined() && reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 != 0) return false;
  return true;
}

torch::Tensor as_activation(const torch::Tensor& t, const torch::Tensor& x) {
  return t.defined() ? t.to(x.scalar_type()).contiguous(kCl) : t;
}

BnGrads run_separate(const DgradLink& l, const LinkedBnInputs& in,
                     const std::function<BnGrads(const torch::Tensor&)>& separate) {
  auto g = data_gradient(l, in.x);
  if (in.grad_out.defined()) g.add_(as_activation(in.grad_out, in.x));
  return separate(g);
}

DgradReluDbnArgs graph_args(const DgradLink& l, const LinkedBnInputs& in) {
  DgradReluDbnArgs a;
  a.dy = l.dy;
  a.w = l.w;
  a.stride = l.stride;
  a.padding = l.padding;
  a.shortcut_grad = as_activation(in.grad_out, in.x);
  a.x = in.x;
  a.save_mean = in.save_mean;
  a.save_invstd = in.save_invstd;
  a.weight = in.weight;
  a.bias = in.bias;
  a.residual = in.residual;
  return a;
}

BnGrads run_graph(const DgradReluDbnGraph& graph, const DgradReluDbnArgs& a, bool has_residual) {
  DgradReluDbn r = graph.run(a);
  BnGrads g;
  g.dx = std::move(r.dx);
  // With a residual, the ReLU-masked gradient is also the residual's.
  if (has_residual) g.dres = std::move(r.dy_relu);
  g.grad_weight = std::move(r.grad_weight);
  g.grad_bias = std::move(r.grad_bias);
  return g;
}

using ShapeKey =
    std::tuple<int, int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
               std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool, bool>;

ShapeKey key_of(const DgradLink& l, const LinkedBnInputs& in) {
  const auto& x = in.x;
  return {x.get_device(),
          static_cast<int>(x.scalar_type()),
          x.size(0),
          x.size(1),
          x.size(2),
          x.size(3),
          l.w.size(0),
          l.w.size(2),
          l.w.size(3),
          l.stride,
          l.padding,
          in.grad_out.defined(),
          in.residual.defined(),
          l.always};
}

std::string describe(const DgradLink& l, const LinkedBnInputs& in) {
  std::ostringstream s;
  const auto& x = in.x;
  s << "bn " << x.size(0) << " x " << x.size(1) << " x " << x.size(2) << " x " << x.size(3)
    << " <- conv " << l.w.size(0) << " x " << l.w.size(2) << "x" << l.w.size(3) << " / "
    << l.stride;
  if (in.grad_out.defined()) s << " + shortcut";
  if (in.residual.defined()) s << " + residual";
  s << " (" << x.scalar_type() << ")";
  return s.str();
}

/// Whether a shape's graph, timed alone, is close enough to the separate path to take. The
/// isolated timing misses what the graph saves inside a step (the data gradient's write and
/// re-read, two launches), and end to end the graph everywhere measured at least as fast as the
/// strict choice, so a near tie goes to the graph; only a graph clearly slower is refused.
bool graph_not_slower(double graph_ms, double separate_ms) {
  return graph_ms <= separate_ms * (1.0 + kDgradGraphTieTolerance);
}

/// The graph for a shape, or null where the separate path runs.
struct Decision {
  std::shared_ptr<DgradReluDbnGraph> graph;
  bool refused = false;
};

#ifdef ORCH_FUSED_BN_CUDA
/// Median milliseconds of `a` and of `b` on the current stream, timed in turns (a, b, a, b, ...)
/// after one untimed call of each, so that a clock or a neighbour changing during the timing
/// lands on both.
template <class A, class B>
std::pair<double, double> time_ms_in_turns(A&& a, B&& b) {
  constexpr int kCalls = 9;
  a();
  b();
  std::vector<double> ms[2];
  const auto stream = at::cuda::getCurrentCUDAStream();
  for (int i = 0; i < kCalls; ++i) {
    for (int which = 0; which < 2; ++which) {
      at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);
      start.record(stream);
      if (which == 0) {
        a();
      } else {
        b();
      }
      stop.record(stream);
      stop.synchronize();
      ms[which].push_back(start.elapsed_time(stop));
    }
  }
  for (auto& m : ms) std::sort(m.begin(), m.end());
  return {ms[0][kCalls / 2], ms[1][kCalls / 2]};
}

bool capturing() {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t err = cudaStreamIsCapturing(at::cuda::getCurrentCUDAStream(), &status);
  return err != cudaSuccess || status != cudaStreamCaptureStatusNone;
}
#endif

Decision decide(const DgradLink& l, const LinkedBnInputs& in,
                const std::function<BnGrads(const torch::Tensor&)>& separate) {
  DgradGraphDecision d;
  d.shape = describe(l, in);
  Decision out;
  const DgradReluDbnArgs a = graph_args(l, in);
  auto made = DgradReluDbnGraph::make(a);
  if (auto* why = std::get_if<std::string>(&made)) {
    out.refused = true;
    d.why = *why;
    note_refusal("cuDNN's graph refused " + d.shape + " (" + *why + ")");
  } else {
    auto graph = std::get<std::shared_ptr<DgradReluDbnGraph>>(made);
#ifdef ORCH_FUSED_BN_CUDA
    if (!l.always) {
      std::tie(d.graph_ms, d.separate_ms) = time_ms_in_turns(
          [&] { (void)graph->run(a); }, [&] { (void)run_separate(l, in, separate); });
    }
#endif
    d.why = graph->engine();
    d.graph = l.always || (d.graph_ms >= 0 && graph_not_slower(d.graph_ms, d.separate_ms));
    if (d.graph) out.graph = std::move(graph);
  }
  const std::lock_guard<std::mutex> lock(g_decisions_mu);
  g_decisions.push_back(d);
  return out;
}

}  // namespace

DgradGraphMode dgrad_graph_mode_from_string(const std::string& name) {
  if (name == "off") return DgradGraphMode::kOff;
  if (name == "auto") return DgradGraphMode::kAuto;
  if (name == "always") return DgradGraphMode::kAlways;
  throw std::invalid_argument("dgrad_graph '" + name + "' is not one of off, auto, always");
}

const char* to_string(DgradGraphMode mode) {
  switch (mode) {
    case DgradGraphMode::kAuto:
      return "auto";
    case DgradGraphMode::kAlways:
      return "always";
    case DgradGraphMode::kOff:
      break;
  }
  return "off";
}

DgradGraphScope::DgradGraphScope(DgradGraphMode mode) : previous_(t_mode) { t_mode = mode; }
DgradGraphScope::~DgradGraphScope() {
  t_mode = previous_;
  t_offered = torch::Tensor();
  t_offered_link.reset();
}

DgradGraphMode dgrad_graph_mode() { return t_mode; }

void offer_dgrad_link(const torch::Tensor& y, const DgradLinkPtr& link) {
  t_offered = y;
  t_offered_link = link;
  ++g_offered;
}

DgradLinkPtr claim_dgrad_link(const torch::Tensor& x) {
  if (!t_offered_link || !x.defined() || !t_offered.defined() ||
      x.unsafeGetTensorImpl() != t_offered.unsafeGetTensorImpl())
    return {};
  t_offered = torch::Tensor();
  ++g_claimed;
  return std::exchange(t_offered_link, DgradLinkPtr());
}

DgradLinkPtr saved_dgrad_link(torch::autograd::AutogradContext& ctx) {
  const auto it = ctx.saved_data.find("dgrad_link");
  if (it == ctx.saved_data.end()) return {};
  return c10::static_intrusive_pointer_cast<DgradLink>(it->second.toCapsule());
}

void save_dgrad_link(torch::autograd::AutogradContext& ctx, const DgradLinkPtr& link) {
  if (link) ctx.saved_data["dgrad_link"] = c10::IValue::make_capsule(link);
}

BnGrads linked_bn_backward(const DgradLink& link, const LinkedBnInputs& in,
                           const std::function<BnGrads(const torch::Tensor& grad_y)>& separate) {
  // Per thread, as conv_bn_from_stats.cpp's graphs: a plan holds the building thread's cuDNN
  // handle, and autograd runs a device's backward on one thread.
  thread_local std::map<ShapeKey, Decision> decided;
  if (!aligned16({link.dy, link.w, in.x, in.residual, in.grad_out})) {
    // cuDNN's tensors are declared 16-byte aligned; a view that is not runs the separate path.
    ++g_refused;
    return run_separate(link, in, separate);
  }
  const ShapeKey key = key_of(link, in);
  auto it = decided.find(key);
  if (it == decided.end()) {
#ifdef ORCH_FUSED_BN_CUDA
    if (capturing()) {
      ++g_capture;
      return run_separate(link, in, separate);
    }
#endif
    it = decided.emplace(key, decide(link, in, separate)).first;
  }
  const Decision& d = it->second;
  if (d.graph) {
    ++g_graph;
    return run_graph(*d.graph, graph_args(link, in), in.residual.defined());
  }
  ++(d.refused ? g_refused : g_slower);
  return run_separate(link, in, separate);
}

DgradGraphCounters dgrad_graph_counters() {
  return {g_graph.load(),   g_slower.load(),  g_refused.load(),
          g_capture.load(), g_offered.load(), g_claimed.load()};
}

std::vector<DgradGraphDecision> dgrad_graph_decisions() {
  const std::lock_guard<std::mutex> lock(g_decisions_mu);
  return g_decisions;
}

}  // namespace orch::resnet
