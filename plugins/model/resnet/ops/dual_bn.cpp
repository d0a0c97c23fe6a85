// dual_bn_relu_from_sums (dual_bn.h): a custom autograd function over dual_bn_kernels.h.
// Graph-capture safe like fused_bn.cpp: allocation only through the caching allocator, launches
// on the current stream, nothing read back.
#include "dual_bn.h"

#include <torch/autograd.h>

#include <atomic>

#include "fused_bn.h"
#include "kernel_availability.h"

#ifdef ORCH_FUSED_BN_CUDA
#include <c10/cuda/CUDAGuard.h>

#include "dual_bn_kernels.h"
#include "fused_bn_launch.h"
#endif

namespace orch::resnet {
namespace {

std::atomic<std::int64_t> g_calls{0};

#ifdef ORCH_FUSED_BN_CUDA

using torch::Tensor;

/// The kernels' view of one batch-norm's vectors.
kernels::BnVectors vectors(const Tensor& weight, const Tensor& bias, const Tensor& save_mean,
                           const Tensor& save_invstd) {
  kernels::BnVectors v;
  v.weight = weight.data_ptr<float>();
  if (bias.defined()) v.bias = bias.data_ptr<float>();
  v.save_mean = save_mean.data_ptr<float>();
  v.save_invstd = save_invstd.data_ptr<float>();
  return v;
}

class DualBnReluFunction : public torch::autograd::Function<DualBnReluFunction> {
 public:
  static Tensor forward(torch::autograd::AutogradContext* ctx, Tensor x, Tensor s, Tensor weight,
                        Tensor bias, Tensor running_mean, Tensor running_var, Tensor weight_s,
                        Tensor bias_s, Tensor running_mean_s, Tensor running_var_s, Tensor sum,
                        Tensor sqsum, Tensor sum_s, Tensor sqsum_s, double momentum, double eps) {
    const c10::cuda::CUDAGuard guard(x.device());
    const std::int64_t channels = x.size(1);
    const std::int64_t rows = x.numel() / channels;
    const auto f32 = x.options().dtype(torch::kFloat);
    auto y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::ChannelsLast));
    auto save_mean = at::empty({channels}, f32), save_invstd = at::empty({channels}, f32);
    auto save_mean_s = at::empty({channels}, f32), save_invstd_s = at::empty({channels}, f32);
    const auto t = tiling_for(rows, channels, {x, s, y});
    auto workspace = at::empty({kernels::workspace_floats(t, channels)}, f32);
    const bool masked = relu_mask_enabled() && kernels::mask_supported(t, channels);
    const Tensor mask =
        masked ? at::empty({kernels::mask_bytes(rows, channels)}, x.options().dtype(torch::kByte))
               : Tensor();
    kernels::BnVectors bn = vectors(weight, bias, save_mean, save_invstd);
    bn.running_mean = running_mean.data_ptr<float>();
    bn.running_var = running_var.data_ptr<float>();
    bn.sum = sum.data_ptr<float>();
    bn.sqsum = sqsum.data_ptr<float>();
    kernels::BnVectors bn_s = vectors(weight_s, bias_s, save_mean_s, save_invstd_s);
    bn_s.running_mean = running_mean_s.data_ptr<float>();
    bn_s.running_var = running_var_s.data_ptr<float>();
    bn_s.sum = sum_s.data_ptr<float>();
    bn_s.sqsum = sqsum_s.data_ptr<float>();
    check_cuda(kernels::dual_forward_from_sums(
                   kernel_dtype(x), t, x.data_ptr(), s.data_ptr(), y.data_ptr(),
                   masked ? mask.data_ptr<std::uint8_t>() : nullptr, bn, bn_s,
                   workspace.data_ptr<float>(), rows, channels, static_cast<float>(momentum),
                   static_cast<float>(eps), at::cuda::getCurrentCUDAStream()),
               "dual forward kernel launch");
    ctx->saved_data["masked"] = masked;
    ctx->save_for_backward({x, s, masked ? mask : y, weight, save_mean, save_invstd, weight_s,
                            save_mean_s, save_invstd_s});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor& x = saved[0];
    const Tensor& s = saved[1];
    const bool masked = ctx->saved_data["masked"].toBool();
    const c10::cuda::CUDAGuard guard(x.device());
    const auto dy = grads[0].to(x.scalar_type()).contiguous(at::MemoryFormat::ChannelsLast);
    const std::int64_t channels = x.size(1);
    const std::int64_t rows = x.numel() / channels;
    const auto f32 = x.options().dtype(torch::kFloat);
    const auto cl = x.options().memory_format(at::MemoryFormat::ChannelsLast);
    Tensor dx = at::empty(x.sizes(), cl), ds = at::empty(x.sizes(), cl);
    Tensor gw = at::empty({channels}, f32), gb = at::empty({channels}, f32);
    Tensor gw_s = at::empty({channels}, f32), gb_s = at::empty({channels}, f32);
    const auto t = tiling_for(rows, channels, {dy, saved[2], x, s, dx, ds});
    auto workspace = at::empty({kernels::workspace_floats(t, channels)}, f32);
    kernels::BnVectors bn = vectors(saved[3], Tensor(), saved[4], saved[5]);
    bn.grad_weight = gw.data_ptr<float>();
    bn.grad_bias = gb.data_ptr<float>();
    kernels::BnVectors bn_s = vectors(saved[6], Tensor(), saved[7], saved[8]);
    bn_s.grad_weight = gw_s.data_ptr<float>();
    bn_s.grad_bias = gb_s.data_ptr<float>();
    check_cuda(kernels::dual_backward(
                   kernel_dtype(x), t, dy.data_ptr(), masked ? nullptr : saved[2].data_ptr(),
                   masked ? saved[2].data_ptr<std::uint8_t>() : nullptr, x.data_ptr(), s.data_ptr(),
                   bn, bn_s, dx.data_ptr(), ds.data_ptr(), workspace.data_ptr<float>(), rows,
                   channels, at::cuda::getCurrentCUDAStream()),
               "dual backward kernel launch");
    // One gradient per forward argument: x, s, weight, bias, running_mean, running_var,
    // weight_s, bias_s, running_mean_s, running_var_s, sum, sqsum, sum_s, sqsum_s, momentum,
    // eps. None for the sums: the batch-norms' backward differentiates through their statistics.
    return {dx,       ds,       gw,       gb,       Tensor(), Tensor(), gw_s,     gb_s,
            Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

#endif  // ORCH_FUSED_BN_CUDA

bool f32_vector_of(const torch::Tensor& t, const torch::Tensor& x) {
  return t.defined() && t.scalar_type() == torch::kFloat && t.device() == x.device() &&
         t.dim() == 1 && t.numel() == x.size(1) && t.is_contiguous();
}

}  // namespace

torch::Tensor dual_bn_relu_from_sums(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x,
                                     const torch::Tensor& sum, const torch::Tensor& sqsum,
                                     torch::nn::BatchNorm2dImpl& bn_s, const torch::Tensor& s,
                                     const torch::Tensor& sum_s, const torch::Tensor& sqsum_s) {
  if (!bn_trains_running_stats(bn) || !bn_trains_running_stats(bn_s)) return {};
  // The kernels take one momentum and eps for both (ResNet's batch-norms share the defaults).
  if (*bn.options.momentum() != *bn_s.options.momentum() || bn.options.eps() != bn_s.options.eps())
    return {};
  // s as x's residual is what fused_bn_supported checks: same shape, dtype, device, layout.
  if (!fused_bn_supported(x, s, bn.weight, bn.bias, bn.running_mean, bn.running_var) ||
      !fused_bn_supported(s, {}, bn_s.weight, bn_s.bias, bn_s.running_mean, bn_s.running_var))
    return {};
  for (const auto* v : {&sum, &sqsum, &sum_s, &sqsum_s})
    if (!f32_vector_of(*v, x)) return {};
  if (!own_kernels_run_on(OwnKernels::kFusedBn, x)) return {};
#ifdef ORCH_FUSED_BN_CUDA
  bn.num_batches_tracked += 1;  // what BatchNormImplBase::forward does in training, for both
  bn_s.num_batches_tracked += 1;
  ++g_calls;
  return DualBnReluFunction::apply(x, s, bn.weight, bn.bias, bn.running_mean, bn.running_var,
                                   bn_s.weight, bn_s.bias, bn_s.running_mean, bn_s.running_var, sum,
                                   sqsum, sum_s, sqsum_s, *bn.options.momentum(), bn.options.eps());
#else
  return {};
#endif
}

std::int64_t dual_bn_calls() { return g_calls.load(); }

}  // namespace orch::resnet
