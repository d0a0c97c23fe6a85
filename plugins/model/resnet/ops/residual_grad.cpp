// conv1x1_with_residual_grad (residual_grad.h): the forward is ATen's convolution; the backward
// computes the weight gradient with ATen's convolution_backward and the data gradient either
// with it too or, when the shortcut's gradient waits in the sink, as one in-place addmm onto it.
#include "residual_grad.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <atomic>
#include <tuple>

namespace orch::resnet {
namespace {

std::atomic<std::int64_t> g_accumulated{0};
std::atomic<std::int64_t> g_plain{0};

const auto kCl = at::MemoryFormat::ChannelsLast;

}  // namespace

ResidualGradSinkPtr residual_grad_sink(torch::autograd::AutogradContext& ctx) {
  const auto it = ctx.saved_data.find("sink");
  if (it == ctx.saved_data.end()) return {};
  return c10::static_intrusive_pointer_cast<ResidualGradSink>(it->second.toCapsule());
}

namespace {

/// [N, C, H, W] channels-last as the [N*H*W, C] matrix over the same memory.
torch::Tensor as_pixel_matrix(const torch::Tensor& t) {
  return t.permute({0, 2, 3, 1}).view({-1, t.size(1)});
}

class Conv1x1ResidualGradFunction : public torch::autograd::Function<Conv1x1ResidualGradFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor weight, ResidualGradSinkPtr sink) {
    // autocast would cast the (fp32) weight to x's reduced precision for the convolution; the
    // same cast here, explicitly, so the backward knows which dtype it computed in.
    const auto w = weight.scalar_type() == x.scalar_type() ? weight : weight.to(x.scalar_type());
    auto y = at::convolution(x, w, std::nullopt, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1);
    ctx->save_for_backward({x, w});
    ctx->saved_data["weight_dtype"] = static_cast<std::int64_t>(weight.scalar_type());
    if (sink) ctx->saved_data["sink"] = c10::IValue::make_capsule(sink);
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto weight_dtype = static_cast<c10::ScalarType>(ctx->saved_data["weight_dtype"].toInt());
    auto [dx, dw] =
        conv1x1_backward_with_sink(grads[0], saved[0], saved[1], residual_grad_sink(*ctx));
    return {dx, dw.to(weight_dtype), torch::Tensor()};
  }
};

}  // namespace

std::pair<torch::Tensor, torch::Tensor> conv1x1_backward_with_sink(const torch::Tensor& grad_y,
                                                                   const torch::Tensor& x,
                                                                   const torch::Tensor& w,
                                                                   const ResidualGradSinkPtr& sink,
                                                                   bool weight_grad) {
  const bool channels_last = x.is_contiguous(kCl);
  auto dy = grad_y.to(x.scalar_type());
  dy = channels_last ? dy.contiguous(kCl) : dy.contiguous();
  torch::Tensor waiting;
  if (sink && sink->grad.defined()) {
    waiting = std::move(sink->grad);
    sink->grad = torch::Tensor();
  }
  const bool accumulate = waiting.defined() && channels_last && waiting.sizes() == x.sizes() &&
                          waiting.scalar_type() == x.scalar_type() && waiting.is_contiguous(kCl);
  const std::array<bool, 3> mask = {!accumulate, weight_grad, false};
  torch::Tensor dx, dw;
  if (mask[0] || mask[1]) {
    std::tie(dx, dw, std::ignore) = at::convolution_backward(dy, x, w, std::nullopt, {1, 1}, {0, 0},
                                                             {1, 1}, false, {0, 0}, 1, mask);
  }
  if (accumulate) {
    // waiting += dy @ W, in place: cuBLAS reads the shortcut's gradient as its C (beta = 1).
    as_pixel_matrix(waiting).addmm_(as_pixel_matrix(dy), w.reshape({w.size(0), w.size(1)}));
    dx = waiting;
    ++g_accumulated;
  } else {
    if (waiting.defined()) dx = dx + waiting;  // a layout the GEMM does not take: add it
    ++g_plain;
  }
  return {dx, dw};
}

torch::Tensor conv1x1_with_residual_grad(const torch::Tensor& x, const torch::Tensor& weight,
                                         const ResidualGradSinkPtr& sink) {
  TORCH_CHECK(x.dim() == 4 && weight.dim() == 4 && weight.size(2) == 1 && weight.size(3) == 1 &&
                  weight.size(1) == x.size(1),
              "conv1x1_with_residual_grad: a 1x1 convolution of a 4-d input with matching "
              "channels, not x ",
              x.sizes(), " and weight ", weight.sizes());
  return Conv1x1ResidualGradFunction::apply(x, weight, sink);
}

ResidualGradCounters residual_grad_counters() { return {g_accumulated.load(), g_plain.load()}; }

}  // namespace orch::resnet
