// cuDNN's fused NHWC batch-norm (+ add) + ReLU behind `fused_bn_impl: cudnn`: the legacy
// cudnnBatchNormalizationForwardTrainingEx / cudnnBatchNormalizationBackwardEx, deprecated in
// cuDNN 9 but present (cudnn_ops.h). Done the way ATen's own cuDNN batch-norm is
// (aten/src/ATen/native/cudnn/BatchNorm.cpp): CUDNN_BATCHNORM_SPATIAL_PERSISTENT for
// channels-last training, a parameter descriptor derived from the input's, the handle from
// at::native::getCudnnHandle() on the current stream, workspace and reserve space from the
// caching allocator; with bnOps BN_ACTIVATION / BN_ADD_ACTIVATION and a ReLU descriptor in place
// of ATen's plain BN. The reserve space (which holds what the backward needs of the activation)
// is kept from forward to backward like ATen keeps it.
#include "fused_bn_cudnn.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "fused_bn.h"

#ifdef ORCH_FUSED_BN_CUDNN
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cudnn/Descriptors.h>
#include <ATen/cudnn/Handle.h>
#include <c10/cuda/CUDAGuard.h>
#include <cudnn.h>
#include <torch/autograd.h>
#endif

namespace orch::resnet {

#ifdef ORCH_FUSED_BN_CUDNN
namespace {

// Training on channels-last input: what ATen picks (getCudnnBatchNormMode), and the mode cuDNN's
// fast NHWC kernels and fused operations need.
constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;

void check(cudnnStatus_t status, const char* what) {
  TORCH_CHECK(status == CUDNN_STATUS_SUCCESS, "fused_bn (cudnn): ", what,
              " failed: ", cudnnGetErrorString(status));
}

/// cuDNN said no to these inputs before launching anything (see setup_refusal).
struct Refused : std::runtime_error {
  Refused(cudnnStatus_t s, const char* c)
      : std::runtime_error(std::string(c) + ": " + cudnnGetErrorString(s)), status(s), call(c) {}
  cudnnStatus_t status;
  const char* call;
};

bool refusal(cudnnStatus_t status) { return status == CUDNN_STATUS_NOT_SUPPORTED; }

cudnnDataType_t cudnn_dtype(const torch::Tensor& x) {
  return x.scalar_type() == torch::kHalf ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}

/// While setting up (and in the forward call, which checks its arguments before launching):
/// NOT_SUPPORTED, and for bf16 also BAD_PARAM (cuDNN's legacy batch-norm is documented for fp16 and
/// fp32 data; a bf16 it rejects as a bad parameter is a dtype it does not take, not a mistake of
/// ours, which fp16 would show).
bool setup_refusal(cudnnStatus_t status, cudnnDataType_t dtype) {
  return refusal(status) || (dtype == CUDNN_DATA_BFLOAT16 && status == CUDNN_STATUS_BAD_PARAM);
}

/// The descriptors and buffer sizes of one call: x, y, z, dy, dx and dz share x's NHWC
/// descriptor; weight, bias, running and saved statistics share the derived fp32 one.
struct Setup {
  // LibTorch's owning wrappers; each is created on its first mut_desc().
  at::native::TensorDescriptor x, param;
  at::native::ActivationDescriptor relu;
  cudnnBatchNormOps_t ops = CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
  cudnnActivationDescriptor_t relu_desc = nullptr;  // relu's, or null for plain batch-norm
  size_t forward_workspace = 0, backward_workspace = 0, reserve = 0;

  /// Returns the refusal where cuDNN does not take these descriptors. Without `relu`: plain
  /// batch-norm (CUDNN_BATCHNORM_OPS_BN, no residual), what ATen's cuDNN batch-norm runs.
  std::optional<Refused> init(cudnnHandle_t handle, const torch::Tensor& x_t, bool has_residual,
                              bool with_relu = true) {
    const cudnnDataType_t dtype = cudnn_dtype(x_t);
    const auto step = [dtype](cudnnStatus_t s, const char* call) -> std::optional<Refused> {
      if (setup_refusal(s, dtype)) return Refused{s, call};
      check(s, call);
      return std::nullopt;
    };
    // NaN passes through ReLU, as in torch::relu and our kernels (ActivationDescriptor::set
    // would not propagate it).
    check(cudnnSetActivationDescriptor(relu.mut_desc(), CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN,
                                       0.0),
          "cudnnSetActivationDescriptor");
    std::optional<Refused> r = step(
        cudnnSetTensor4dDescriptor(x.mut_desc(), CUDNN_TENSOR_NHWC, dtype,
                                   static_cast<int>(x_t.size(0)), static_cast<int>(x_t.size(1)),
                                   static_cast<int>(x_t.size(2)), static_cast<int>(x_t.size(3))),
        "cudnnSetTensor4dDescriptor");
    if (!r) {
      r = step(cudnnDeriveBNTensorDescriptor(param.mut_desc(), x.desc(), kMode),
               "cudnnDeriveBNTensorDescriptor");
    }
    ops = !with_relu     ? CUDNN_BATCHNORM_OPS_BN
          : has_residual ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION
                         : CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
    relu_desc = with_relu ? relu.desc() : nullptr;  // plain BN: cuDNN takes no activation
    const cudnnTensorDescriptor_t z = has_residual ? x.desc() : nullptr;
    if (!r) {
      r = step(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
                   handle, kMode, ops, x.desc(), z, x.desc(), param.desc(), relu_desc,
                   &forward_workspace),
               "cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize");
    }
    if (!r) {
      r = step(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(handle, kMode, ops, relu_desc,
                                                                    x.desc(), &reserve),
               "cudnnGetBatchNormalizationTrainingExReserveSpaceSize");
    }
    if (!r) {
      r = step(cudnnGetBatchNormalizationBackwardExWorkspaceSize(
                   handle, kMode, ops, x.desc(), x.desc(), x.desc(), z, x.desc(), param.desc(),
                   relu_desc, &backward_workspace),
               "cudnnGetBatchNormalizationBackwardExWorkspaceSize");
    }
    return r;
  }
};

/// cuDNN's handle for the current device, set to the current stream (getCudnnHandle() does so
/// itself in this LibTorch; setting it again costs nothing and does not depend on that).
cudnnHandle_t current_handle() {
  cudnnHandle_t handle = at::native::getCudnnHandle();
  check(cudnnSetStream(handle, at::cuda::getCurrentCUDAStream()), "cudnnSetStream");
  return handle;
}

torch::Tensor bytes(size_t n, const torch::Tensor& like) {
  return at::empty({static_cast<std::int64_t>(n)}, like.options().dtype(torch::kByte));
}

/// A workspace of at least `n` bytes that is never null: cuDNN's API reference has the Ex
/// functions act like their non-extended forms (no fused ReLU or add) when given a null
/// workspace of size 0, and the caching allocator returns null for 0 bytes.
torch::Tensor workspace_bytes(size_t& n, const torch::Tensor& like) {
  n = std::max<size_t>(n, 256);
  return bytes(n, like);
}

/// relu(batch_norm(x) [+ residual]) in training mode, forward and backward through cuDNN; with
/// `with_relu` false, batch_norm(x) alone (no residual).
class CudnnBnReluFunction : public torch::autograd::Function<CudnnBnReluFunction> {
 public:
  // The residual is optional for the same reason as in FusedBnReluFunction: LibTorch's custom
  // functions refuse an undefined Tensor argument but take an empty std::optional.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               std::optional<torch::Tensor> residual_arg, torch::Tensor weight,
                               torch::Tensor bias, torch::Tensor running_mean,
                               torch::Tensor running_var, double momentum, double eps,
                               ResidualGradSinkPtr sink, bool with_relu) {
    const c10::cuda::CUDAGuard guard(x.device());
    const torch::Tensor residual = residual_arg.value_or(torch::Tensor());
    TORCH_CHECK(with_relu || !residual.defined(), "plain cuDNN batch-norm takes no residual");
    const cudnnHandle_t handle = current_handle();
    Setup s;
    if (auto refused = s.init(handle, x, residual.defined(), with_relu)) throw *refused;
    const std::int64_t channels = x.size(1);
    const auto f32 = x.options().dtype(torch::kFloat);
    auto y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::ChannelsLast));
    auto save_mean = at::empty({channels}, f32);
    auto save_invvar = at::empty({channels}, f32);
    auto workspace = workspace_bytes(s.forward_workspace, x);
    auto reserve = bytes(s.reserve, x);
    const float one = 1.f, zero = 0.f;  // fp32 scaling factors for half / bf16 data
    const cudnnStatus_t status = cudnnBatchNormalizationForwardTrainingEx(
        handle, kMode, s.ops, &one, &zero, s.x.desc(), x.data_ptr(),
        residual.defined() ? s.x.desc() : nullptr,
        residual.defined() ? residual.data_ptr() : nullptr, s.x.desc(), y.data_ptr(),
        s.param.desc(), weight.data_ptr(), bias.data_ptr(), momentum, running_mean.data_ptr(),
        running_var.data_ptr(), eps, save_mean.data_ptr(), save_invvar.data_ptr(), s.relu_desc,
        workspace.data_ptr(), s.forward_workspace, reserve.data_ptr(), s.reserve);
    if (setup_refusal(status, cudnn_dtype(x))) {
      throw Refused{status, "cudnnBatchNormalizationForwardTrainingEx"};
    }
    check(status, "cudnnBatchNormalizationForwardTrainingEx");
    ctx->saved_data["has_residual"] = residual.defined();
    ctx->saved_data["with_relu"] = with_relu;
    ctx->saved_data["eps"] = eps;
    if (sink && residual.defined()) ctx->saved_data["sink"] = c10::IValue::make_capsule(sink);
    // Plain batch-norm's backward does not read y (ATen's passes null too): not kept alive.
    ctx->save_for_backward(
        {x, with_relu ? y : torch::Tensor(), weight, bias, save_mean, save_invvar, reserve});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& y = saved[1];
    const auto& weight = saved[2];
    const auto& bias = saved[3];
    auto reserve = saved[6];
    const c10::cuda::CUDAGuard guard(x.device());
    const bool has_residual = ctx->saved_data["has_residual"].toBool();
    const bool with_relu = ctx->saved_data["with_relu"].toBool();
    const double eps = ctx->saved_data["eps"].toDouble();
    auto dy = grads[0].to(x.scalar_type()).contiguous(at::MemoryFormat::ChannelsLast);
    const cudnnHandle_t handle = current_handle();
    Setup s;
    if (auto refused = s.init(handle, x, has_residual, with_relu)) {
      // The forward went through with the same descriptors, so this does not happen.
      check(refused->status, refused->call);
    }
    const std::int64_t channels = x.size(1);
    const auto f32 = x.options().dtype(torch::kFloat);
    const auto cl = x.options().memory_format(at::MemoryFormat::ChannelsLast);
    auto dx = at::empty(x.sizes(), cl);
    torch::Tensor dres = has_residual ? at::empty(x.sizes(), cl) : torch::Tensor();
    auto grad_weight = at::empty({channels}, f32);
    auto grad_bias = at::empty({channels}, f32);
    auto workspace = workspace_bytes(s.backward_workspace, x);
    const float one = 1.f, zero = 0.f;
    check(cudnnBatchNormalizationBackwardEx(
              handle, kMode, s.ops, &one, &zero, &one, &zero, s.x.desc(), x.data_ptr(),
              with_relu ? s.x.desc() : nullptr, with_relu ? y.data_ptr() : nullptr, s.x.desc(),
              dy.data_ptr(), has_residual ? s.x.desc() : nullptr,
              has_residual ? dres.data_ptr() : nullptr, s.x.desc(), dx.data_ptr(), s.param.desc(),
              weight.data_ptr(), bias.data_ptr(), grad_weight.data_ptr(), grad_bias.data_ptr(), eps,
              saved[4].data_ptr(), saved[5].data_ptr(), s.relu_desc, workspace.data_ptr(),
              s.backward_workspace, reserve.data_ptr(), static_cast<size_t>(reserve.numel())),
          "cudnnBatchNormalizationBackwardEx");
    // fused_residual_grad: conv1's backward adds onto the residual's gradient (residual_grad.h).
    if (auto sink = residual_grad_sink(*ctx)) sink->grad = std::exchange(dres, torch::Tensor());
    // One gradient per forward argument: x, residual, weight, bias, running_mean,
    // running_var, momentum, eps, sink, with_relu.
    return {dx,
            dres,
            grad_weight,
            grad_bias,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

/// Shapes cuDNN has refused in this process, so a refused shape is asked about once.
using ShapeKey =
    std::tuple<int, int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool>;

ShapeKey key_of(const torch::Tensor& x, bool has_residual, bool with_relu) {
  return {x.get_device(), static_cast<int>(x.scalar_type()),
          x.size(0),      x.size(1),
          x.size(2),      x.size(3),
          has_residual,   with_relu};
}

std::mutex g_refused_mutex;
std::set<ShapeKey> g_refused;

}  // namespace
#endif  // ORCH_FUSED_BN_CUDNN

bool cudnn_fused_bn_compiled() {
#ifdef ORCH_FUSED_BN_CUDNN
  return true;
#else
  return false;
#endif
}

bool cudnn_fused_bn_supported(const torch::Tensor& x, const torch::Tensor& residual,
                              const torch::Tensor& weight, const torch::Tensor& bias,
                              const torch::Tensor& running_mean, const torch::Tensor& running_var,
                              std::string* why) {
  const auto no = [why](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  if (!fused_bn_supported(x, residual, weight, bias, running_mean, running_var)) {
    return no("not an fp16/bf16 channels-last CUDA training input (see fused_bn_supported)");
  }
  if (!cudnn_fused_bn_compiled()) return no("built without cuDNN");
  // cuDNN's fused NHWC batch-norm kernels want channels in multiples of 4 (what TensorFlow's
  // grappler checks before it fuses batch-norm + add + ReLU into cuDNN's).
  if (x.size(1) % 4 != 0) return no("channels not a multiple of 4");
  // cuDNN's 4-d descriptors take int sizes; ATen's cuDNN batch-norm stops below 2^31 elements.
  if (x.numel() >= std::numeric_limits<std::int32_t>::max()) return no("2^31 elements or more");
  if (why) why->clear();
  return true;
}

namespace {

/// cudnn_fused_bn_relu_try and cudnn_bn_try: with_relu false is plain batch-norm, no residual.
torch::Tensor cudnn_try(const torch::Tensor& x, const torch::Tensor& residual,
                        const torch::Tensor& weight, const torch::Tensor& bias,
                        const torch::Tensor& running_mean, const torch::Tensor& running_var,
                        double momentum, double eps, std::string* refused,
                        const ResidualGradSinkPtr& sink, bool with_relu) {
  // Inputs cuDNN is not tried on are a refusal too, with the reason (checked here once, so
  // the caller in the training step does not check first).
  if (!cudnn_fused_bn_supported(x, residual, weight, bias, running_mean, running_var, refused))
    return {};
#ifdef ORCH_FUSED_BN_CUDNN
  if (eps < CUDNN_BN_MIN_EPSILON) {
    if (refused) *refused = "epsilon below CUDNN_BN_MIN_EPSILON";
    return {};
  }
  const ShapeKey key = key_of(x, residual.defined(), with_relu);
  {
    const std::lock_guard<std::mutex> lock(g_refused_mutex);
    if (g_refused.count(key) != 0) {
      if (refused) *refused = "refused before for this shape and dtype";
      return {};
    }
  }
  try {
    return CudnnBnReluFunction::apply(
        x, residual.defined() ? std::optional<torch::Tensor>(residual) : std::nullopt, weight, bias,
        running_mean, running_var, momentum, eps, sink, with_relu);
  } catch (const Refused& r) {
    {
      const std::lock_guard<std::mutex> lock(g_refused_mutex);
      g_refused.insert(key);
    }
    if (refused) *refused = r.what();
    return {};
  }
#else
  (void)momentum;
  (void)eps;
  (void)refused;
  (void)sink;
  (void)with_relu;
  return {};
#endif
}

}  // namespace

torch::Tensor cudnn_fused_bn_relu_try(const torch::Tensor& x, const torch::Tensor& residual,
                                      const torch::Tensor& weight, const torch::Tensor& bias,
                                      const torch::Tensor& running_mean,
                                      const torch::Tensor& running_var, double momentum, double eps,
                                      std::string* refused, const ResidualGradSinkPtr& sink) {
  return cudnn_try(x, residual, weight, bias, running_mean, running_var, momentum, eps, refused,
                   sink, /*with_relu=*/true);
}

torch::Tensor cudnn_bn_try(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias, const torch::Tensor& running_mean,
                           const torch::Tensor& running_var, double momentum, double eps,
                           std::string* refused) {
  return cudnn_try(x, torch::Tensor(), weight, bias, running_mean, running_var, momentum, eps,
                   refused, {}, /*with_relu=*/false);
}

torch::Tensor cudnn_fused_bn_relu_training(const torch::Tensor& x, const torch::Tensor& residual,
                                           const torch::Tensor& weight, const torch::Tensor& bias,
                                           const torch::Tensor& running_mean,
                                           const torch::Tensor& running_var, double momentum,
                                           double eps) {
  std::string refused;
  TORCH_CHECK(
      cudnn_fused_bn_supported(x, residual, weight, bias, running_mean, running_var, &refused),
      "cudnn_fused_bn_relu_training: inputs the cuDNN path does not try (x ", x.scalar_type(), " ",
      x.sizes(), " on ", x.device(), ": ", refused, ")");
  auto y = cudnn_fused_bn_relu_try(x, residual, weight, bias, running_mean, running_var, momentum,
                                   eps, &refused);
  TORCH_CHECK(y.defined(), "cudnn_fused_bn_relu_training: cuDNN does not take x ", x.scalar_type(),
              " ", x.sizes(), residual.defined() ? " with a residual" : "", " (", refused, ")");
  return y;
}

}  // namespace orch::resnet
