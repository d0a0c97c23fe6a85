#include "conv_bnstats.h"

#include <stdexcept>

#ifdef ORCH_FUSED_BN_CUDNN
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cudnn/Handle.h>
#include <c10/cuda/CUDAGuard.h>
#include <cudnn.h>

#include <algorithm>
#include <functional>
#include <vector>

// The fused-ops API is deprecated in cuDNN 9 (still present); this file uses nothing else.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace orch::resnet {

ConvShape check_conv_bnstats_args(const char* who, const torch::Tensor& x, const torch::Tensor& w,
                                  std::int64_t stride, std::int64_t padding,
                                  const std::optional<ScaleBiasRelu>& prologue) {
  const auto require = [who](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string(who) + ": " + what);
  };
  require(x.is_cuda() && w.device() == x.device(), "x and w must be on the same CUDA device");
  require(x.dim() == 4 && w.dim() == 4 && w.size(1) == x.size(1), "x is NCHW, w is KCRS");
  require(x.scalar_type() == w.scalar_type() &&
              (x.scalar_type() == torch::kHalf || x.scalar_type() == torch::kBFloat16),
          "x and w must both be fp16 or both bf16");
  require(x.is_contiguous(at::MemoryFormat::ChannelsLast) &&
              w.is_contiguous(at::MemoryFormat::ChannelsLast),
          "x and w must be channels-last");
  if (prologue) {
    for (const auto* t : {&prologue->scale, &prologue->bias})
      require(t->device() == x.device() && t->scalar_type() == x.scalar_type() &&
                  t->numel() == x.size(1) && t->is_contiguous(),
              "scale and bias: C contiguous values of x's dtype on its device");
  }
  ConvShape sh{x.size(0), x.size(1), x.size(2), x.size(3), w.size(0), w.size(2), w.size(3), 0, 0};
  sh.p = (sh.h + 2 * padding - sh.r) / stride + 1;
  sh.q = (sh.w + 2 * padding - sh.s) / stride + 1;
  return sh;
}

#ifndef ORCH_FUSED_BN_CUDNN

std::variant<ConvStats, std::string> conv_bnstats(const torch::Tensor&, const torch::Tensor&,
                                                  std::int64_t, std::int64_t,
                                                  const std::optional<ScaleBiasRelu>&) {
  return std::string("built without cuDNN's headers (see plugins/model/resnet/CMakeLists.txt)");
}

#else

namespace {

/// Owns cuDNN objects made while setting up one call; destroys them in reverse order.
class Owned {
 public:
  ~Owned() {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
  }
  template <class T, class Destroy>
  T keep(T handle, Destroy destroy) {
    undo_.push_back([handle, destroy] { destroy(handle); });
    return handle;
  }

 private:
  std::vector<std::function<void()>> undo_;
};

/// cuDNN declined the inputs (see check below).
struct Refusal {
  std::string why;
};

}  // namespace

std::variant<ConvStats, std::string> conv_bnstats(const torch::Tensor& x, const torch::Tensor& w,
                                                  std::int64_t stride, std::int64_t padding,
                                                  const std::optional<ScaleBiasRelu>& prologue) {
  const ConvShape sh = check_conv_bnstats_args("conv_bnstats", x, w, stride, padding, prologue);
  const auto n = sh.n, c = sh.c, h = sh.h, wd = sh.w, k = sh.k, r = sh.r, s = sh.s, p = sh.p, q = sh.q;
  c10::cuda::CUDAGuard guard(x.device());
  const cudnnDataType_t dtype =
      x.scalar_type() == torch::kHalf ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
  const auto i = [](std::int64_t v) { return static_cast<int>(v); };
  // A status other than success or a refusal is our misuse or a cuDNN failure: throw. A
  // refusal is NOT_SUPPORTED, and for bf16 also BAD_PARAM: cuDNN's legacy API answers so for a
  // dtype it does not take (as its legacy batch-norm does, fused_bn_cudnn.cpp); fp16 would
  // show a mistake of ours.
  const auto check = [&](cudnnStatus_t st, const char* what) {
    if (st == CUDNN_STATUS_SUCCESS) return;
    if (st == CUDNN_STATUS_NOT_SUPPORTED || st == CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH ||
        (dtype == CUDNN_DATA_BFLOAT16 && st == CUDNN_STATUS_BAD_PARAM))
      throw Refusal{std::string(what) + ": " + cudnnGetErrorString(st)};
    throw std::runtime_error(std::string("conv_bnstats: ") + what + " failed: " +
                             cudnnGetErrorString(st));
  };

  try {
    Owned own;
    const auto tensor = [&](cudnnDataType_t t, std::int64_t d0, std::int64_t d1, std::int64_t d2,
                            std::int64_t d3) {
      cudnnTensorDescriptor_t desc;
      check(cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor");
      own.keep(desc, cudnnDestroyTensorDescriptor);
      check(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NHWC, t, i(d0), i(d1), i(d2), i(d3)),
            "cudnnSetTensor4dDescriptor");
      return desc;
    };
    cudnnTensorDescriptor_t x_desc = tensor(dtype, n, c, h, wd);
    cudnnTensorDescriptor_t y_desc = tensor(dtype, n, k, p, q);
    cudnnTensorDescriptor_t stats_desc = tensor(CUDNN_DATA_FLOAT, 1, k, 1, 1);
    cudnnFilterDescriptor_t w_desc;
    check(cudnnCreateFilterDescriptor(&w_desc), "cudnnCreateFilterDescriptor");
    own.keep(w_desc, cudnnDestroyFilterDescriptor);
    check(cudnnSetFilter4dDescriptor(w_desc, dtype, CUDNN_TENSOR_NHWC, i(k), i(c), i(r), i(s)),
          "cudnnSetFilter4dDescriptor");
    cudnnConvolutionDescriptor_t conv;
    check(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    own.keep(conv, cudnnDestroyConvolutionDescriptor);
    check(cudnnSetConvolution2dDescriptor(conv, i(padding), i(padding), i(stride), i(stride), 1, 1,
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionMathType(conv, CUDNN_TENSOR_OP_MATH), "cudnnSetConvolutionMathType");

    const cudnnFusedOps_t op = CUDNN_FUSED_SCALE_BIAS_ACTIVATION_CONV_BNSTATS;
    cudnnFusedOpsConstParamPack_t constants;
    check(cudnnCreateFusedOpsConstParamPack(&constants, op), "cudnnCreateFusedOpsConstParamPack");
    own.keep(constants, cudnnDestroyFusedOpsConstParamPack);
    const auto set = [&](cudnnFusedOpsConstParamLabel_t label, const void* value) {
      check(cudnnSetFusedOpsConstParamPackAttribute(constants, label, value),
            "cudnnSetFusedOpsConstParamPackAttribute");
    };
    const cudnnFusedOpsPointerPlaceHolder_t aligned = CUDNN_PTR_16B_ALIGNED;
    const cudnnBatchNormMode_t bn_mode = CUDNN_BATCHNORM_SPATIAL;
    set(CUDNN_PARAM_XDESC, x_desc);
    set(CUDNN_PARAM_XDATA_PLACEHOLDER, &aligned);
    set(CUDNN_PARAM_BN_MODE, &bn_mode);
    set(CUDNN_PARAM_CONV_DESC, conv);
    set(CUDNN_PARAM_WDESC, w_desc);
    set(CUDNN_PARAM_WDATA_PLACEHOLDER, &aligned);
    set(CUDNN_PARAM_YDESC, y_desc);
    set(CUDNN_PARAM_YDATA_PLACEHOLDER, &aligned);
    set(CUDNN_PARAM_YSTATS_DESC, stats_desc);
    set(CUDNN_PARAM_YSUM_PLACEHOLDER, &aligned);
    set(CUDNN_PARAM_YSQSUM_PLACEHOLDER, &aligned);
    if (prologue) {
      cudnnTensorDescriptor_t scale_desc = tensor(dtype, 1, c, 1, 1);
      cudnnActivationDescriptor_t relu;
      check(cudnnCreateActivationDescriptor(&relu), "cudnnCreateActivationDescriptor");
      own.keep(relu, cudnnDestroyActivationDescriptor);
      check(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
            "cudnnSetActivationDescriptor");
      set(CUDNN_PARAM_BN_EQSCALEBIAS_DESC, scale_desc);
      set(CUDNN_PARAM_BN_EQSCALE_PLACEHOLDER, &aligned);
      set(CUDNN_PARAM_BN_EQBIAS_PLACEHOLDER, &aligned);
      set(CUDNN_PARAM_ACTIVATION_DESC, relu);
    }

    const cudnnHandle_t handle = at::native::getCudnnHandle();
    check(cudnnSetStream(handle, at::cuda::getCurrentCUDAStream()), "cudnnSetStream");
    cudnnFusedOpsPlan_t plan;
    check(cudnnCreateFusedOpsPlan(&plan, op), "cudnnCreateFusedOpsPlan");
    own.keep(plan, cudnnDestroyFusedOpsPlan);
    size_t workspace_bytes = 0;
    check(cudnnMakeFusedOpsPlan(handle, plan, constants, &workspace_bytes), "cudnnMakeFusedOpsPlan");

    ConvStats out;
    out.y = at::empty({n, k, p, q}, x.options().memory_format(at::MemoryFormat::ChannelsLast));
    out.sum = at::empty({k}, x.options().dtype(torch::kFloat32));
    out.sqsum = at::empty({k}, x.options().dtype(torch::kFloat32));
    // 16-byte aligned like every allocation of the caching allocator; at least one byte so
    // the pointer is never null.
    at::Tensor workspace = at::empty({static_cast<std::int64_t>(std::max<size_t>(workspace_bytes, 1))},
                                     x.options().dtype(torch::kByte));

    cudnnFusedOpsVariantParamPack_t vars;
    check(cudnnCreateFusedOpsVariantParamPack(&vars, op), "cudnnCreateFusedOpsVariantParamPack");
    own.keep(vars, cudnnDestroyFusedOpsVariantParamPack);
    const auto var = [&](cudnnFusedOpsVariantParamLabel_t label, void* ptr) {
      check(cudnnSetFusedOpsVariantParamPackAttribute(vars, label, ptr),
            "cudnnSetFusedOpsVariantParamPackAttribute");
    };
    var(CUDNN_PTR_XDATA, x.data_ptr());
    var(CUDNN_PTR_WDATA, w.data_ptr());
    var(CUDNN_PTR_YDATA, out.y.data_ptr());
    var(CUDNN_PTR_YSUM, out.sum.data_ptr());
    var(CUDNN_PTR_YSQSUM, out.sqsum.data_ptr());
    var(CUDNN_PTR_WORKSPACE, workspace.data_ptr());
    var(CUDNN_SCALAR_SIZE_T_WORKSPACE_SIZE_IN_BYTES, &workspace_bytes);
    if (prologue) {
      var(CUDNN_PTR_BN_EQSCALE, prologue->scale.data_ptr());
      var(CUDNN_PTR_BN_EQBIAS, prologue->bias.data_ptr());
    }
    check(cudnnFusedOpsExecute(handle, plan, vars), "cudnnFusedOpsExecute");
    return out;
  } catch (const Refusal& r) {
    return "cuDNN does not take it: " + r.why;
  }
}

#endif

}  // namespace orch::resnet
