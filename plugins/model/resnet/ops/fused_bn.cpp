// fused_bn_relu: picks the fused CUDA kernels (ours, or cuDNN's: fused_bn_cudnn.cpp) or the
// unfused ops, and wraps our kernels in a custom autograd function. Graph-capture safe: the
// fused path only allocates through the caching allocator (at::empty), launches on the current
// stream and never reads values back.
#include "fused_bn.h"

#include <torch/autograd.h>

#include <atomic>
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include "dgrad_link.h"
#include "fused_bn_cudnn.h"
#include "kernel_availability.h"

#ifdef ORCH_FUSED_BN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "fused_bn_kernels.h"
#include "fused_bn_launch.h"
#endif

namespace orch::resnet {
namespace {

std::atomic<std::int64_t> g_unfused{0};
std::atomic<std::int64_t> g_orch{0};
std::atomic<std::int64_t> g_cudnn{0};
std::atomic<std::int64_t> g_cudnn_fallback{0};
std::atomic<std::int64_t> g_plain_cudnn{0};
std::atomic<std::int64_t> g_plain_module{0};
std::atomic<std::int64_t> g_from_sums{0};
std::atomic<std::int64_t> g_masked{0};
// Set by ReluMaskScope for the model forward it spans (per thread: autograd's backward threads
// never read it, the forward's thread does).
thread_local bool t_relu_mask = true;

#ifdef ORCH_FUSED_BN_CUDA

/// relu(batch_norm(x) [+ residual]) in training mode; see fused_bn_kernels.cu for the passes.
class FusedBnReluFunction : public torch::autograd::Function<FusedBnReluFunction> {
 public:
  // The residual is optional: LibTorch's custom functions refuse an undefined Tensor argument
  // ("tensor does not have a device") but take an empty std::optional as a non-variable.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               std::optional<torch::Tensor> residual_arg, torch::Tensor weight,
                               torch::Tensor bias, torch::Tensor running_mean,
                               torch::Tensor running_var, double momentum, double eps,
                               ResidualGradSinkPtr sink, std::optional<torch::Tensor> sum,
                               std::optional<torch::Tensor> sqsum, DgradLinkPtr link) {
    const c10::cuda::CUDAGuard guard(x.device());
    const torch::Tensor residual = residual_arg.value_or(torch::Tensor());
    if (sink && residual.defined()) ctx->saved_data["sink"] = c10::IValue::make_capsule(sink);
    const std::int64_t channels = x.size(1);
    const std::int64_t rows = x.numel() / channels;
    const auto f32 = x.options().dtype(torch::kFloat);
    auto y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::ChannelsLast));
    auto save_mean = at::empty({channels}, f32);
    auto save_invstd = at::empty({channels}, f32);
    const auto t = tiling_for(rows, channels, {x, residual, y});
    auto workspace = at::empty({kernels::workspace_floats(t, channels)}, f32);
    // ReLU's mask, one bit per element, where the 16-byte path runs: the backward reads it
    // instead of y (fused_bn_kernels.cu says why). Elsewhere y is saved as before.
    const bool masked = t_relu_mask && kernels::mask_supported(t, channels);
    torch::Tensor mask =
        masked ? at::empty({kernels::mask_bytes(rows, channels)}, x.options().dtype(torch::kByte))
               : torch::Tensor();
    auto* mask_ptr = masked ? mask.data_ptr<std::uint8_t>() : nullptr;
    if (sum && sqsum) {
      // The statistics came with x (a convolution's epilogue, conv_bn_from_stats.h): no pass
      // over x.
      check_cuda(
          kernels::forward_from_sums(
              kernel_dtype(x), t, x.data_ptr(), residual.defined() ? residual.data_ptr() : nullptr,
              y.data_ptr(), mask_ptr, weight.data_ptr<float>(), bias.data_ptr<float>(),
              running_mean.data_ptr<float>(), running_var.data_ptr<float>(), sum->data_ptr<float>(),
              sqsum->data_ptr<float>(), save_mean.data_ptr<float>(), save_invstd.data_ptr<float>(),
              workspace.data_ptr<float>(), rows, channels, static_cast<float>(momentum),
              static_cast<float>(eps), at::cuda::getCurrentCUDAStream()),
          "forward-from-sums kernel launch");
    } else {
      check_cuda(
          kernels::forward_training(
              kernel_dtype(x), t, x.data_ptr(), residual.defined() ? residual.data_ptr() : nullptr,
              y.data_ptr(), mask_ptr, weight.data_ptr<float>(), bias.data_ptr<float>(),
              running_mean.data_ptr<float>(), running_var.data_ptr<float>(),
              save_mean.data_ptr<float>(), save_invstd.data_ptr<float>(),
              workspace.data_ptr<float>(), rows, channels, static_cast<float>(momentum),
              static_cast<float>(eps), at::cuda::getCurrentCUDAStream()),
          "forward kernel launch");
    }
    ctx->saved_data["has_residual"] = residual.defined();
    ctx->saved_data["masked"] = masked;
    if (masked) ++g_masked;
    // Saving y costs no memory (the next convolution saves it as its input); the mask does,
    // 1/16 of y, and saves the backward reading y twice.
    if (link) {
      // dgrad_graph: the linked backward recomputes the ReLU's input from x, bias and the
      // residual (the caller links only where the residual is saved anyway: conv1 of an
      // identity block keeps it as its input). Its output may get no gradient through autograd
      // at all (the next convolution leaves its gradient in the link): no zeros made for it.
      save_dgrad_link(*ctx, link);
      ctx->set_materialize_grads(false);
      ctx->save_for_backward(
          {x, masked ? mask : y, weight, save_mean, save_invstd, bias, residual});
    } else {
      ctx->save_for_backward({x, masked ? mask : y, weight, save_mean, save_invstd});
    }
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const bool masked = ctx->saved_data["masked"].toBool();
    const torch::Tensor y = masked ? torch::Tensor() : saved[1];
    const torch::Tensor mask = masked ? saved[1] : torch::Tensor();
    const auto& weight = saved[2];
    const c10::cuda::CUDAGuard guard(x.device());
    const bool has_residual = ctx->saved_data["has_residual"].toBool();
    const auto cl_like = [&](const torch::Tensor& g) {
      return g.to(x.scalar_type()).contiguous(at::MemoryFormat::ChannelsLast);
    };
    // Our kernels' backward, given the output's whole gradient.
    const auto kernels_backward = [&](const torch::Tensor& grad_y) {
      const auto dy = cl_like(grad_y);
      const std::int64_t channels = x.size(1);
      const std::int64_t rows = x.numel() / channels;
      const auto f32 = x.options().dtype(torch::kFloat);
      const auto cl = x.options().memory_format(at::MemoryFormat::ChannelsLast);
      BnGrads g;
      g.dx = at::empty(x.sizes(), cl);
      if (has_residual) g.dres = at::empty(x.sizes(), cl);
      g.grad_weight = at::empty({channels}, f32);
      g.grad_bias = at::empty({channels}, f32);
      const auto t = tiling_for(rows, channels, {dy, y, x, g.dx, g.dres});
      auto workspace = at::empty({kernels::workspace_floats(t, channels)}, f32);
      check_cuda(
          kernels::backward(
              kernel_dtype(x), t, dy.data_ptr(), masked ? nullptr : y.data_ptr(),
              masked ? mask.data_ptr<std::uint8_t>() : nullptr, x.data_ptr(),
              weight.data_ptr<float>(), saved[3].data_ptr<float>(), saved[4].data_ptr<float>(),
              g.dx.data_ptr(), has_residual ? g.dres.data_ptr() : nullptr,
              g.grad_weight.data_ptr<float>(), g.grad_bias.data_ptr<float>(),
              workspace.data_ptr<float>(), rows, channels, at::cuda::getCurrentCUDAStream()),
          "backward kernel launch");
      return g;
    };
    BnGrads g;
    const DgradLinkPtr link = saved_dgrad_link(*ctx);
    if (link && link->dy.defined()) {
      // dgrad_graph: the next convolution's data gradient is computed here (dgrad_link.h).
      LinkedBnInputs in;
      in.x = x;
      in.save_mean = saved[3];
      in.save_invstd = saved[4];
      in.weight = weight;
      in.bias = saved[5];
      in.residual = saved[6];
      in.grad_out = grads[0];
      g = linked_bn_backward(*link, in, kernels_backward);
      link->dy = torch::Tensor();  // its memory goes back now, not with the autograd graph
      link->w = torch::Tensor();
    } else {
      // Unlinked, or linked to a convolution that did not run our backward: autograd's gradient
      // (zeros where none came, as materialised gradients would have been).
      g = kernels_backward(grads[0].defined() ? grads[0] : at::zeros_like(x));
    }
    torch::Tensor dx = std::move(g.dx), dres = std::move(g.dres);
    torch::Tensor grad_weight = std::move(g.grad_weight), grad_bias = std::move(g.grad_bias);
    // fused_residual_grad: conv1's backward adds onto the residual's gradient (residual_grad.h).
    if (auto sink = residual_grad_sink(*ctx)) sink->grad = std::exchange(dres, torch::Tensor());
    // One gradient per forward argument: x, residual, weight, bias, running_mean,
    // running_var, momentum, eps, sink, sum, sqsum, link. None for the sums: they are statistics
    // of x that the batch-norm's backward formula already differentiates through (dx above).
    return {dx,
            dres,
            grad_weight,
            grad_bias,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

#endif  // ORCH_FUSED_BN_CUDA

bool is_f32_vector(const torch::Tensor& t, const torch::Tensor& x, std::int64_t channels) {
  return t.defined() && t.scalar_type() == torch::kFloat && t.device() == x.device() &&
         t.dim() == 1 && t.numel() == channels && t.is_contiguous();
}

void note_unfused(const torch::Tensor& x) {
  static std::once_flag cpu_once, cuda_once;
  if (!x.is_cuda()) {
    std::call_once(cpu_once, [] { std::cerr << "fused_bn: no CUDA device, unfused batch-norm\n"; });
  } else if (!fused_bn_compiled()) {
    std::call_once(cuda_once, [] {
      std::cerr << "fused_bn: built without the CUDA kernels (no nvcc), unfused batch-norm\n";
    });
  } else {
    std::call_once(cuda_once, [&x] {
      std::cerr << "fused_bn: input " << x.scalar_type() << " "
                << (x.is_contiguous(at::MemoryFormat::ChannelsLast) ? "channels-last"
                                                                    : "not channels-last")
                << " is not fp16/bf16 channels-last, unfused batch-norm\n";
    });
  }
}

/// A module in training mode whose forward would update running statistics with a momentum:
/// what the fused and cuDNN paths implement (anything else runs the module's own forward).
bool trains_running_stats(const torch::nn::BatchNorm2dImpl& bn) {
  const auto& o = bn.options;
  return bn.is_training() && o.track_running_stats() && o.affine() && o.momentum().has_value() &&
         bn.num_batches_tracked.defined();
}

/// A residual in another layout (a downsample branch that came out NCHW) made channels-last
/// like x rather than giving up the fusion; autograd routes its gradient back.
torch::Tensor channels_last_residual(const torch::Tensor& x, const torch::Tensor& residual) {
  if (residual.defined() && residual.sizes() == x.sizes() &&
      x.is_contiguous(at::MemoryFormat::ChannelsLast) &&
      !residual.is_contiguous(at::MemoryFormat::ChannelsLast)) {
    return residual.contiguous(at::MemoryFormat::ChannelsLast);
  }
  return residual;
}

void note_cudnn_fallback(const torch::Tensor& x, const std::string& why) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::cerr << "fused_bn: cuDNN's fused batch-norm does not take " << x.scalar_type() << " "
              << x.sizes() << " (" << why << "), our fused kernels instead"
              << " (fused_bn_counters().cudnn_fallback counts each such call)\n";
  });
}

}  // namespace

ReluMaskScope::ReluMaskScope(bool enabled) : previous_(t_relu_mask) { t_relu_mask = enabled; }
ReluMaskScope::~ReluMaskScope() { t_relu_mask = previous_; }
bool relu_mask_enabled() { return t_relu_mask; }

FusedBnImpl fused_bn_impl_from_string(const std::string& name) {
  if (name == "orch") return FusedBnImpl::kOrch;
  if (name == "cudnn") return FusedBnImpl::kCudnn;
  throw std::invalid_argument("fused_bn_impl '" + name + "' is not one of orch, cudnn");
}

const char* to_string(FusedBnImpl impl) { return impl == FusedBnImpl::kCudnn ? "cudnn" : "orch"; }

bool bn_trains_running_stats(const torch::nn::BatchNorm2dImpl& bn) {
  return trains_running_stats(bn);
}

bool fused_bn_compiled() {
#ifdef ORCH_FUSED_BN_CUDA
  return true;
#else
  return false;
#endif
}

bool fused_bn_supported(const torch::Tensor& x, const torch::Tensor& residual,
                        const torch::Tensor& weight, const torch::Tensor& bias,
                        const torch::Tensor& running_mean, const torch::Tensor& running_var) {
  if (!fused_bn_compiled() || !x.defined() || !x.is_cuda() || x.dim() != 4) return false;
  if (x.scalar_type() != torch::kHalf && x.scalar_type() != torch::kBFloat16) return false;
  if (!x.is_contiguous(at::MemoryFormat::ChannelsLast) || x.numel() == 0) return false;
  const std::int64_t channels = x.size(1);
  if (channels > std::numeric_limits<int>::max() || x.numel() / channels < 2) return false;
  for (const auto* t : {&weight, &bias, &running_mean, &running_var}) {
    if (!is_f32_vector(*t, x, channels)) return false;
  }
  if (residual.defined()) {
    if (residual.sizes() != x.sizes() || residual.scalar_type() != x.scalar_type() ||
        residual.device() != x.device() ||
        !residual.is_contiguous(at::MemoryFormat::ChannelsLast)) {
      return false;
    }
  }
  return true;
}

torch::Tensor fused_bn_relu_training(const torch::Tensor& x, const torch::Tensor& residual,
                                     const torch::Tensor& weight, const torch::Tensor& bias,
                                     const torch::Tensor& running_mean,
                                     const torch::Tensor& running_var, double momentum, double eps,
                                     const ResidualGradSinkPtr& sink) {
  TORCH_CHECK(fused_bn_supported(x, residual, weight, bias, running_mean, running_var),
              "fused_bn_relu_training: inputs the fused kernels do not take (x ", x.scalar_type(),
              " ", x.sizes(), " on ", x.device(), "; see fused_bn_supported)");
#ifdef ORCH_FUSED_BN_CUDA
  const std::string unavailable =
      own_kernels_unavailable_reason(OwnKernels::kFusedBn, x.get_device());
  TORCH_CHECK(unavailable.empty(), "fused_bn_relu_training: the fused kernels cannot run on ",
              x.device(), " (", unavailable, ")");
  return FusedBnReluFunction::apply(
      x, residual.defined() ? std::optional<torch::Tensor>(residual) : std::nullopt, weight, bias,
      running_mean, running_var, momentum, eps, sink, std::optional<torch::Tensor>(),
      std::optional<torch::Tensor>(), DgradLinkPtr());
#else
  (void)momentum;
  (void)eps;
  (void)sink;
  return {};
#endif
}

torch::Tensor fused_bn_relu(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x,
                            const torch::Tensor& residual_in, FusedBnImpl impl,
                            const ResidualGradSinkPtr& sink) {
  const auto& o = bn.options;
  const torch::Tensor residual = channels_last_residual(x, residual_in);
  if (trains_running_stats(bn) &&
      fused_bn_supported(x, residual, bn.weight, bn.bias, bn.running_mean, bn.running_var)) {
    // cuDNN where it takes the input; where it does not (a shape or dtype its fused kernels
    // lack), our kernels, which take every fused_bn_supported input: still fused, counted.
    std::string why;
    if (impl == FusedBnImpl::kCudnn) {
      auto y = cudnn_fused_bn_relu_try(x, residual, bn.weight, bn.bias, bn.running_mean,
                                       bn.running_var, *o.momentum(), o.eps(), &why, sink);
      if (y.defined()) {
        bn.num_batches_tracked += 1;  // what BatchNormImplBase::forward does in training
        ++g_cudnn;
        return y;
      }
    }
    // Our kernels where the GPU can run them; otherwise (counted with the reason by
    // own_kernels_run_on) the unfused ops below.
    if (own_kernels_run_on(OwnKernels::kFusedBn, x)) {
      if (impl == FusedBnImpl::kCudnn) {
        ++g_cudnn_fallback;
        note_cudnn_fallback(x, why);
      }
      bn.num_batches_tracked += 1;
      ++g_orch;
      return fused_bn_relu_training(x, residual, bn.weight, bn.bias, bn.running_mean,
                                    bn.running_var, *o.momentum(), o.eps(), sink);
    }
    ++g_unfused;  // own_kernels_run_on has said why
  } else {
    ++g_unfused;
    if (bn.is_training() || !x.is_cuda()) note_unfused(x);
  }
  auto out = bn.forward(x);
  if (residual.defined()) out += residual;
  return out.relu_();
}

static bool sums_fit(const torch::Tensor& t, const torch::Tensor& x) {
  return is_f32_vector(t, x, x.size(1));
}

torch::Tensor fused_bn_relu_from_sums(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x,
                                      const torch::Tensor& sum, const torch::Tensor& sqsum,
                                      const torch::Tensor& residual_in,
                                      const ResidualGradSinkPtr& sink) {
  const torch::Tensor residual = channels_last_residual(x, residual_in);
  if (!trains_running_stats(bn) ||
      !fused_bn_supported(x, residual, bn.weight, bn.bias, bn.running_mean, bn.running_var) ||
      !sums_fit(sum, x) || !sums_fit(sqsum, x) || !own_kernels_run_on(OwnKernels::kFusedBn, x)) {
    return {};
  }
#ifdef ORCH_FUSED_BN_CUDA
  const auto& o = bn.options;
  bn.num_batches_tracked += 1;  // what BatchNormImplBase::forward does in training
  ++g_orch;
  ++g_from_sums;
  // dgrad_graph: offered for the next convolution (dgrad_link.h), where the linked backward
  // needs nothing saved that is not saved anyway: no residual, or an identity block's (the
  // sink's), which conv1 keeps as its input. A downsample branch's output would be kept alive
  // for the backward only for this.
  DgradLinkPtr link;
  if (dgrad_graph_mode() != DgradGraphMode::kOff && torch::GradMode::is_enabled() &&
      (!residual.defined() || sink)) {
    link = c10::make_intrusive<DgradLink>();
    link->always = dgrad_graph_mode() == DgradGraphMode::kAlways;
  }
  auto y = FusedBnReluFunction::apply(
      x, residual.defined() ? std::optional<torch::Tensor>(residual) : std::nullopt, bn.weight,
      bn.bias, bn.running_mean, bn.running_var, *o.momentum(), o.eps(), sink,
      std::optional<torch::Tensor>(sum), std::optional<torch::Tensor>(sqsum), link);
  if (link) offer_dgrad_link(y, link);
  return y;
#else
  (void)sink;
  return {};
#endif
}

torch::Tensor batch_norm_cudnn(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x) {
  const auto& o = bn.options;
  if (trains_running_stats(bn)) {
    auto y = cudnn_bn_try(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, *o.momentum(),
                          o.eps());
    if (y.defined()) {
      bn.num_batches_tracked += 1;  // what BatchNormImplBase::forward does in training
      ++g_plain_cudnn;
      return y;
    }
  }
  ++g_plain_module;
  return bn.forward(x);
}

FusedBnCounters fused_bn_counters() {
  FusedBnCounters c;
  c.orch = g_orch.load();
  c.cudnn = g_cudnn.load();
  c.cudnn_fallback = g_cudnn_fallback.load();
  c.unfused = g_unfused.load();
  c.plain_cudnn = g_plain_cudnn.load();
  c.plain_module = g_plain_module.load();
  c.from_sums = g_from_sums.load();
  c.relu_mask = g_masked.load();
  c.fused = c.orch + c.cudnn;
  return c;
}

}  // namespace orch::resnet
