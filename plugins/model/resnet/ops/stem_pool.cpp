// stem_bn_relu_pool: the fused stem (stem_pool_kernels.cu) in a custom autograd function, or
// fused_bn_relu then max_pool. Graph-capture safe like fused_bn.cpp: allocations through the
// caching allocator, launches on the current stream, nothing read back.
#include "stem_pool.h"

#include <torch/autograd.h>

#include <atomic>

#include "kernel_availability.h"

#ifdef ORCH_FUSED_BN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "fused_bn_kernels.h"
#include "fused_bn_launch.h"
#include "stem_pool_kernels.h"
#endif

namespace orch::resnet {
namespace {

std::atomic<std::int64_t> g_fused{0};
std::atomic<std::int64_t> g_unfused{0};

#ifdef ORCH_FUSED_BN_CUDA

namespace sp = stem_pool_kernels;

sp::Dtype pool_dtype(const torch::Tensor& x) {
  return x.scalar_type() == torch::kHalf ? sp::Dtype::kHalf : sp::Dtype::kBFloat16;
}

sp::Shape shape_of(const torch::Tensor& x, std::int64_t kernel, std::int64_t stride,
                   std::int64_t padding) {
  sp::Shape s;
  s.n = x.size(0);
  s.c = x.size(1);
  s.h = x.size(2);
  s.w = x.size(3);
  s.kernel = static_cast<int>(kernel);
  s.stride = static_cast<int>(stride);
  s.padding = static_cast<int>(padding);
  return s;
}

class StemPoolFunction : public torch::autograd::Function<StemPoolFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor weight, torch::Tensor bias, torch::Tensor running_mean,
                               torch::Tensor running_var, double momentum, double eps,
                               std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
    const c10::cuda::CUDAGuard guard(x.device());
    const std::int64_t channels = x.size(1);
    const std::int64_t rows = x.numel() / channels;
    const auto f32 = x.options().dtype(torch::kFloat);
    const auto stream = at::cuda::getCurrentCUDAStream();
    auto save_mean = at::empty({channels}, f32);
    auto save_invstd = at::empty({channels}, f32);
    const auto t = tiling_for(rows, channels, {x});
    auto workspace = at::empty({kernels::workspace_floats(t, channels)}, f32);
    check_cuda(kernels::batch_stats(kernel_dtype(x), t, x.data_ptr(), weight.data_ptr<float>(),
                                    bias.data_ptr<float>(), running_mean.data_ptr<float>(),
                                    running_var.data_ptr<float>(), save_mean.data_ptr<float>(),
                                    save_invstd.data_ptr<float>(), workspace.data_ptr<float>(),
                                    rows, channels, static_cast<float>(momentum),
                                    static_cast<float>(eps), stream),
               "stem statistics kernel launch");
    const sp::Shape s = shape_of(x, kernel, stride, padding);
    const auto cl = x.options().memory_format(at::MemoryFormat::ChannelsLast);
    auto y = at::empty({s.n, s.c, s.out_h(), s.out_w()}, cl);
    auto where = at::empty({s.n, s.c, s.out_h(), s.out_w()}, cl.dtype(torch::kUInt8));
    check_cuda(sp::forward(pool_dtype(x), s, x.data_ptr(),
                           workspace.data_ptr<float>() + kernels::stats_coef_offset(t, channels),
                           y.data_ptr(), where.data_ptr<std::uint8_t>(), stream),
               "stem pooling kernel launch");
    ctx->save_for_backward({x, where, weight, save_mean, save_invstd});
    ctx->saved_data["kernel"] = kernel;
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& where = saved[1];
    const c10::cuda::CUDAGuard guard(x.device());
    const std::int64_t channels = x.size(1);
    const std::int64_t rows = x.numel() / channels;
    const auto f32 = x.options().dtype(torch::kFloat);
    const auto stream = at::cuda::getCurrentCUDAStream();
    const auto cl = x.options().memory_format(at::MemoryFormat::ChannelsLast);
    const torch::Tensor dy =
        grads[0].defined() ? grads[0].to(x.scalar_type()).contiguous(at::MemoryFormat::ChannelsLast)
                           : at::zeros(where.sizes(), cl);
    TORCH_CHECK(aligned16(dy),
                "stem pooling backward: the incoming gradient is not 16-byte aligned");
    const sp::Shape s =
        shape_of(x, ctx->saved_data["kernel"].toInt(), ctx->saved_data["stride"].toInt(),
                 ctx->saved_data["padding"].toInt());
    const int parts =
        sp::partial_parts(s, at::cuda::getCurrentDeviceProperties()->multiProcessorCount);
    auto workspace = at::empty({(static_cast<std::int64_t>(parts) + 1) * 3 * channels}, f32);
    float* partial = workspace.data_ptr<float>();
    float* coef = partial + static_cast<std::int64_t>(parts) * 3 * channels;
    auto grad_weight = at::empty({channels}, f32);
    auto grad_bias = at::empty({channels}, f32);
    auto dx = at::empty(x.sizes(), cl);
    const auto dtype = pool_dtype(x);
    check_cuda(
        sp::backward_partial(dtype, s, dy.data_ptr(), where.data_ptr<std::uint8_t>(), x.data_ptr(),
                             saved[3].data_ptr<float>(), partial, parts, stream),
        "stem backward reduction launch");
    check_cuda(kernels::backward_coefficients(
                   partial, parts, channels, rows, saved[2].data_ptr<float>(),
                   saved[3].data_ptr<float>(), saved[4].data_ptr<float>(),
                   grad_weight.data_ptr<float>(), grad_bias.data_ptr<float>(), coef, stream),
               "stem backward coefficients launch");
    check_cuda(sp::backward_apply(dtype, s, dy.data_ptr(), where.data_ptr<std::uint8_t>(),
                                  x.data_ptr(), coef, dx.data_ptr(), stream),
               "stem backward launch");
    // One per forward argument: x, weight, bias, running_mean, running_var, momentum, eps,
    // kernel, stride, padding.
    return {dx,
            grad_weight,
            grad_bias,
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

}  // namespace

bool stem_pool_supported(const torch::Tensor& x, const torch::nn::BatchNorm2dImpl& bn,
                         const torch::nn::MaxPool2dOptions& pool) {
#ifdef ORCH_FUSED_BN_CUDA
  if (!fused_bn_supported(x, {}, bn.weight, bn.bias, bn.running_mean, bn.running_var) ||
      !orch_max_pool_supported(x, pool))
    return false;
  const auto k = (*pool.kernel_size())[0];
  return sp::supported(shape_of(x, k, (*pool.stride())[0], (*pool.padding())[0]), pool_dtype(x));
#else
  (void)x;
  (void)bn;
  (void)pool;
  return false;
#endif
}

torch::Tensor stem_bn_relu_pool_training(const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias,
                                         const torch::Tensor& running_mean,
                                         const torch::Tensor& running_var, double momentum,
                                         double eps, const torch::nn::MaxPool2dOptions& pool) {
#ifdef ORCH_FUSED_BN_CUDA
  TORCH_CHECK(fused_bn_supported(x, {}, weight, bias, running_mean, running_var) &&
                  orch_max_pool_supported(x, pool),
              "stem_bn_relu_pool_training: inputs the fused kernels do not take (x ",
              x.scalar_type(), " ", x.sizes(), " on ", x.device(), ")");
  const std::string unavailable =
      own_kernels_unavailable_reason(OwnKernels::kFusedBn, x.get_device());
  TORCH_CHECK(unavailable.empty(), "stem_bn_relu_pool_training: the kernels cannot run on ",
              x.device(), " (", unavailable, ")");
  return StemPoolFunction::apply(x, weight, bias, running_mean, running_var, momentum, eps,
                                 (*pool.kernel_size())[0], (*pool.stride())[0],
                                 (*pool.padding())[0]);
#else
  (void)x, (void)weight, (void)bias, (void)running_mean, (void)running_var;
  (void)momentum, (void)eps, (void)pool;
  TORCH_CHECK(false, "stem_bn_relu_pool_training: built without the CUDA kernels");
  return {};
#endif
}

torch::Tensor stem_bn_relu_pool(torch::nn::BatchNorm2dImpl& bn, torch::nn::MaxPool2dImpl& pool,
                                const torch::Tensor& x, FusedBnImpl impl, MaxPoolImpl pool_impl) {
  if (bn_trains_running_stats(bn) && stem_pool_supported(x, bn, pool.options) &&
      own_kernels_run_on(OwnKernels::kFusedBn, x)) {
    const auto& o = bn.options;
    bn.num_batches_tracked += 1;  // what BatchNormImplBase::forward does in training
    ++g_fused;
    return stem_bn_relu_pool_training(x, bn.weight, bn.bias, bn.running_mean, bn.running_var,
                                      *o.momentum(), o.eps(), pool.options);
  }
  ++g_unfused;
  return max_pool(pool, fused_bn_relu(bn, x, {}, impl), pool_impl);
}

StemPoolCounters stem_pool_counters() { return {g_fused.load(), g_unfused.load()}; }

}  // namespace orch::resnet
