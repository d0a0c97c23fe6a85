// conv_bn_relu_from_stats (conv_bn_from_stats.h): the convolution with statistics as a custom
// autograd function over ConvStatsGraph, one cuDNN graph per convolution shape and thread,
// then fused_bn_relu_from_sums. Graph-capture safe once every shape has been seen (the first call
// per shape builds cuDNN's plan, which may compile kernels: the warm-up steps do that).
#include "conv_bn_from_stats.h"

#include <torch/autograd.h>

#include <array>
#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <variant>

#include "conv_stats_graph.h"
#include "dgrad_link.h"
#include "dual_bn.h"
#include "wgrad_stream.h"

namespace orch::resnet {
namespace {

std::atomic<std::int64_t> g_taken{0};
std::atomic<std::int64_t> g_fallback{0};
std::atomic<std::int64_t> g_dual{0};
std::atomic<std::int64_t> g_dual_fallback{0};

const auto kCl = at::MemoryFormat::ChannelsLast;

/// Says once per distinct reason why a call ran the usual way.
void note_fallback(const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> said;
  const std::lock_guard<std::mutex> lock(mu);
  if (said.insert(why).second)
    std::cerr << "conv_bn_stats: " << why
              << "; the convolution and its batch-norm run as with fused_bn alone "
                 "(conv_bn_from_stats_counters().fallback counts each such call)\n";
}

/// The convolution, returning {y, sum(y), sum(y^2)} per output channel; the sums are not
/// differentiable outputs (the batch-norm's backward differentiates through its statistics).
class ConvStatsFunction : public torch::autograd::Function<ConvStatsFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                torch::Tensor x, torch::Tensor weight,
                                                std::shared_ptr<ConvStatsGraph> graph,
                                                std::int64_t stride, std::int64_t padding,
                                                ResidualGradSinkPtr sink, DgradLinkPtr link) {
    // autocast would cast the (fp32) weight to x's dtype for the convolution; the same cast,
    // explicitly (this function is not an autocast-aware op), in the layout the graph wants.
    const auto w = (weight.scalar_type() == x.scalar_type() ? weight : weight.to(x.scalar_type()))
                       .contiguous(kCl);
    ConvStats out = graph->run(x, w, std::nullopt);
    ctx->save_for_backward({x, w});
    ctx->saved_data["weight_dtype"] = static_cast<std::int64_t>(weight.scalar_type());
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    if (sink) ctx->saved_data["sink"] = c10::IValue::make_capsule(sink);
    // The parameter itself, whose .grad the second stream fills (wgrad_stream.h).
    if (wgrad_stream_enabled() && weight.requires_grad() && weight.is_leaf())
      ctx->saved_data["wgrad_stream_weight"] = weight;
    save_dgrad_link(*ctx, link);
    ctx->mark_non_differentiable({out.sum, out.sqsum});
    return {out.y, out.sum, out.sqsum};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& w = saved[1];
    const auto weight_dtype = static_cast<c10::ScalarType>(ctx->saved_data["weight_dtype"].toInt());
    const std::int64_t stride = ctx->saved_data["stride"].toInt();
    const std::int64_t padding = ctx->saved_data["padding"].toInt();
    const auto second = ctx->saved_data.find("wgrad_stream_weight");
    const bool wgrad_elsewhere = second != ctx->saved_data.end();
    // dw on the second stream where the option asked for it; here otherwise.
    const auto weight_grad = [&](const torch::Tensor& dy) {
      if (wgrad_elsewhere) {
        weight_grad_on_second_stream(dy, x, w, second->second.toTensor(), stride, padding);
        return torch::Tensor();
      }
      const std::array<bool, 3> mask = {false, true, false};
      return std::get<1>(at::convolution_backward(dy, x, w, std::nullopt, {stride, stride},
                                                  {padding, padding}, {1, 1}, false, {0, 0}, 1,
                                                  mask));
    };
    torch::Tensor dx, dw;
    if (auto link = saved_dgrad_link(*ctx)) {
      // dgrad_graph: the batch-norm before this convolution computes the data gradient
      // (dgrad_link.h); here only the weight gradient. A shortcut gradient waiting in the sink
      // is x's gradient so far: the linked backward adds the data gradient to it.
      link->dy = grads[0].to(x.scalar_type()).contiguous(kCl);
      link->w = w;
      link->stride = stride;
      link->padding = padding;
      dw = weight_grad(link->dy);
      if (auto sink = residual_grad_sink(*ctx)) dx = std::exchange(sink->grad, torch::Tensor());
    } else if (auto sink = residual_grad_sink(*ctx)) {
      // Only made for 1x1, stride 1, unpadded convolutions (conv_bn_relu_from_stats checks).
      const auto dy = grads[0].to(x.scalar_type()).contiguous(kCl);
      std::tie(dx, dw) = conv1x1_backward_with_sink(dy, x, w, sink, !wgrad_elsewhere);
      if (wgrad_elsewhere) weight_grad(dy);
    } else {
      const auto dy = grads[0].to(x.scalar_type()).contiguous(kCl);
      const std::array<bool, 3> mask = {true, !wgrad_elsewhere, false};
      std::tie(dx, dw, std::ignore) =
          at::convolution_backward(dy, x, w, std::nullopt, {stride, stride}, {padding, padding},
                                   {1, 1}, false, {0, 0}, 1, mask);
      if (wgrad_elsewhere) weight_grad(dy);
    }
    // One gradient per forward argument: x, weight, graph, stride, padding, sink, link.
    return {dx,
            dw.defined() ? dw.to(weight_dtype) : dw,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

/// A convolution shape on one device: what a ConvStatsGraph is built for.
using ShapeKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                            std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;

/// cuDNN's graph for this shape, or its refusal, asked once per shape on this thread (the
/// plans hold the building thread's cuDNN handle, so each thread keeps its own).
std::variant<std::shared_ptr<ConvStatsGraph>, std::string> graph_for(const torch::Tensor& x,
                                                                     const torch::Tensor& weight,
                                                                     std::int64_t stride,
                                                                     std::int64_t padding) {
  thread_local std::map<ShapeKey, std::variant<std::shared_ptr<ConvStatsGraph>, std::string>>
      graphs;
  const ShapeKey key{x.get_device(), x.size(0),      x.size(1),      x.size(2), x.size(3),
                     weight.size(0), weight.size(2), weight.size(3), stride,    padding};
  auto it = graphs.find(key);
  if (it == graphs.end()) {
    // The weight as the convolution will see it (x's dtype, channels-last): built once.
    const auto w = weight.to(x.scalar_type()).contiguous(kCl);
    it = graphs.emplace(key, ConvStatsGraph::make(x, w, stride, padding, std::nullopt)).first;
  }
  return it->second;
}

/// Why conv_bn_relu_from_stats cannot take these inputs, or "" when it can (up to cuDNN's
/// answer).
std::string unsupported(const torch::nn::Conv2dImpl& conv, const torch::Tensor& x,
                        std::int64_t* stride, std::int64_t* padding) {
  if (!x.is_cuda() || x.dim() != 4) return "input not a 4-d CUDA tensor";
  if (x.scalar_type() == torch::kBFloat16)
    return "bf16 input (cuDNN's conv + statistics engines measured slower than the "
           "convolution alone for bf16)";
  if (x.scalar_type() != torch::kHalf) return "input not fp16";
  if (!x.is_contiguous(kCl)) return "input not channels-last";
  if (!fused_bn_compiled()) return "built without the fused batch-norm kernels";
  const auto& o = conv.options;
  const auto* pad = std::get_if<torch::ExpandingArray<2>>(&o.padding());
  if (o.bias() || o.groups() != 1 || (*o.dilation())[0] != 1 || (*o.dilation())[1] != 1 ||
      (*o.stride())[0] != (*o.stride())[1] || pad == nullptr || (**pad)[0] != (**pad)[1] ||
      !std::holds_alternative<torch::enumtype::kZeros>(o.padding_mode()))
    return "a convolution with bias, groups, dilation, unequal strides or paddings";
  *stride = (*o.stride())[0];
  *padding = (**pad)[0];
  return "";
}

}  // namespace

torch::Tensor conv_bn_relu_from_stats(torch::nn::Conv2dImpl& conv, torch::nn::BatchNorm2dImpl& bn,
                                      const torch::Tensor& x, const torch::Tensor& residual,
                                      FusedBnImpl impl, const ResidualGradSinkPtr& bn_sink,
                                      const ResidualGradSinkPtr& conv_sink,
                                      const std::function<torch::Tensor()>& unfused_conv) {
  auto usual = [&](const std::string& why) {
    ++g_fallback;
    if (!why.empty()) note_fallback(why);
    return fused_bn_relu(bn, unfused_conv(), residual, impl, bn_sink);
  };
  std::int64_t stride = 1, padding = 0;
  if (!bn_trains_running_stats(bn)) return usual("");
  if (const std::string why = unsupported(conv, x, &stride, &padding); !why.empty())
    return usual(why);
  if (conv_sink &&
      (conv.weight.size(2) != 1 || conv.weight.size(3) != 1 || stride != 1 || padding != 0))
    return usual("a residual-gradient sink on a convolution that is not 1x1, stride 1");
  auto graph = graph_for(x, conv.weight, stride, padding);
  if (auto* refused = std::get_if<std::string>(&graph)) {
    std::ostringstream what;
    what << "cuDNN's graph refused the convolution of " << x.sizes() << " by "
         << conv.weight.sizes() << " (" << *refused << ")";
    return usual(what.str());
  }
  // dgrad_graph: where x is a fused batch-norm's output on offer, that batch-norm's backward
  // computes this convolution's data gradient (dgrad_link.h).
  auto outs =
      ConvStatsFunction::apply(x, conv.weight, std::get<std::shared_ptr<ConvStatsGraph>>(graph),
                               stride, padding, conv_sink, claim_dgrad_link(x));
  auto y = fused_bn_relu_from_sums(bn, outs[0], outs[1], outs[2], residual, bn_sink);
  if (y.defined()) {
    ++g_taken;
    return y;
  }
  // The batch-norm's kernels did not take the convolution's output after all (a residual of
  // another shape or dtype, parameters that are not fp32): the usual fused_bn_relu on it.
  ++g_fallback;
  note_fallback("the fused batch-norm did not take the convolution's output");
  return fused_bn_relu(bn, outs[0], residual, impl, bn_sink);
}

torch::Tensor conv_bn_add_shortcut_relu_from_stats(
    torch::nn::Conv2dImpl& conv, torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x,
    torch::nn::Conv2dImpl& conv_s, torch::nn::BatchNorm2dImpl& bn_s, const torch::Tensor& x_s,
    FusedBnImpl impl, const std::function<torch::Tensor()>& unfused_conv,
    const std::function<torch::Tensor()>& shortcut) {
  auto usual = [&](const std::string& why) {
    ++g_dual_fallback;
    if (!why.empty()) note_fallback("fused_downsample: " + why);
    return conv_bn_relu_from_stats(conv, bn, x, shortcut(), impl, {}, {}, unfused_conv);
  };
  if (!bn_trains_running_stats(bn) || !bn_trains_running_stats(bn_s)) return usual("");
  std::int64_t stride = 1, padding = 0, stride_s = 1, padding_s = 0;
  if (const std::string why = unsupported(conv, x, &stride, &padding); !why.empty())
    return usual(why);
  if (const std::string why = unsupported(conv_s, x_s, &stride_s, &padding_s); !why.empty())
    return usual("the shortcut: " + why);
  auto graph = graph_for(x, conv.weight, stride, padding);
  auto graph_s = graph_for(x_s, conv_s.weight, stride_s, padding_s);
  for (const auto* g : {&graph, &graph_s}) {
    if (const auto* refused = std::get_if<std::string>(g)) {
      return usual("cuDNN's graph refused a convolution (" + *refused + ")");
    }
  }
  // conv claims its input's link as conv_bn_relu_from_stats would; the shortcut's convolution
  // shares the block's input with conv1, which claimed it, and its data gradient reaches the
  // previous batch-norm through autograd.
  auto outs =
      ConvStatsFunction::apply(x, conv.weight, std::get<std::shared_ptr<ConvStatsGraph>>(graph),
                               stride, padding, ResidualGradSinkPtr(), claim_dgrad_link(x));
  auto outs_s = ConvStatsFunction::apply(
      x_s, conv_s.weight, std::get<std::shared_ptr<ConvStatsGraph>>(graph_s), stride_s, padding_s,
      ResidualGradSinkPtr(), DgradLinkPtr());
  auto y =
      dual_bn_relu_from_sums(bn, outs[0], outs[1], outs[2], bn_s, outs_s[0], outs_s[1], outs_s[2]);
  if (y.defined()) {
    ++g_dual;
    ++g_taken;
    return y;
  }
  // The kernels did not take the pair (different shapes or dtypes, parameters not fp32): each
  // batch-norm on its own, from the convolutions already run.
  ++g_dual_fallback;
  note_fallback(
      "fused_downsample: the two batch-norms' kernels did not take the convolutions' "
      "outputs");
  const auto residual = batch_norm_cudnn(bn_s, outs_s[0]);
  auto out = fused_bn_relu_from_sums(bn, outs[0], outs[1], outs[2], residual, {});
  return out.defined() ? out : fused_bn_relu(bn, outs[0], residual, impl, {});
}

ConvBnFromStatsCounters conv_bn_from_stats_counters() {
  return {g_taken.load(), g_fallback.load(), g_dual.load(), g_dual_fallback.load()};
}

}  // namespace orch::resnet
