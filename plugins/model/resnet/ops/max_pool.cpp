// max_pool: ATen's pooling or ours (max_pool_kernels.cu) in a custom autograd function. Graph
// capture safe like fused_bn.cpp: allocations through the caching allocator, launches on the
// current stream, nothing read back.
#include "max_pool.h"

#include <torch/autograd.h>

#include <atomic>
#include <iostream>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "kernel_availability.h"

#ifdef ORCH_FUSED_BN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "max_pool_kernels.h"
#endif

namespace orch::resnet {
namespace {

std::atomic<std::int64_t> g_orch{0};
std::atomic<std::int64_t> g_aten{0};

// The options as one square window, or nothing when they are not square / use dilation or
// ceil mode (ours does not do those).
struct Window {
  int kernel = 0, stride = 0, padding = 0;
};

bool square(const torch::ExpandingArray<2>& a) { return (*a)[0] == (*a)[1]; }

std::optional<Window> window_of(const torch::nn::MaxPool2dOptions& o) {
  if (!square(o.kernel_size()) || !square(o.stride()) || !square(o.padding()) ||
      (*o.dilation())[0] != 1 || (*o.dilation())[1] != 1 || o.ceil_mode())
    return std::nullopt;
  return Window{static_cast<int>((*o.kernel_size())[0]), static_cast<int>((*o.stride())[0]),
                static_cast<int>((*o.padding())[0])};
}

#ifdef ORCH_FUSED_BN_CUDA

namespace k = max_pool_kernels;

k::Dtype kernel_dtype(const torch::Tensor& x) {
  switch (x.scalar_type()) {
    case torch::kHalf:
      return k::Dtype::kHalf;
    case torch::kBFloat16:
      return k::Dtype::kBFloat16;
    default:
      return k::Dtype::kFloat;
  }
}

k::Shape shape_of(const torch::Tensor& x, const Window& w) {
  k::Shape s;
  s.n = x.size(0);
  s.c = x.size(1);
  s.h = x.size(2);
  s.w = x.size(3);
  s.kernel = w.kernel;
  s.stride = w.stride;
  s.padding = w.padding;
  return s;
}

void check_cuda(cudaError_t err, const char* what) {
  TORCH_CHECK(err == cudaSuccess, "max_pool: ", what, " failed: ", cudaGetErrorName(err), " (",
              cudaGetErrorString(err), ")");
}

bool aligned16(const torch::Tensor& t) {
  return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0;
}

class MaxPoolFunction : public torch::autograd::Function<MaxPoolFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               int64_t kernel, int64_t stride, int64_t padding) {
    const c10::cuda::CUDAGuard guard(x.device());
    const k::Shape s = shape_of(
        x, {static_cast<int>(kernel), static_cast<int>(stride), static_cast<int>(padding)});
    const auto cl = x.options().memory_format(at::MemoryFormat::ChannelsLast);
    auto y = at::empty({s.n, s.c, s.out_h(), s.out_w()}, cl);
    auto where = at::empty({s.n, s.c, s.out_h(), s.out_w()}, cl.dtype(torch::kUInt8));
    check_cuda(k::forward(kernel_dtype(x), s, x.data_ptr(), y.data_ptr(),
                          where.data_ptr<std::uint8_t>(), at::cuda::getCurrentCUDAStream()),
               "forward kernel launch");
    ctx->save_for_backward({where});
    ctx->saved_data["kernel"] = kernel;
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["dtype"] = static_cast<int64_t>(x.scalar_type());
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto where = ctx->get_saved_variables()[0];
    const c10::cuda::CUDAGuard guard(where.device());
    const auto sizes = ctx->saved_data["sizes"].toIntVector();
    const auto dtype = static_cast<c10::ScalarType>(ctx->saved_data["dtype"].toInt());
    const auto cl = where.options().dtype(dtype).memory_format(at::MemoryFormat::ChannelsLast);
    auto dy = grads[0].to(dtype).contiguous(at::MemoryFormat::ChannelsLast);
    auto dx = at::empty(sizes, cl);
    const k::Shape s = shape_of(dx, {static_cast<int>(ctx->saved_data["kernel"].toInt()),
                                     static_cast<int>(ctx->saved_data["stride"].toInt()),
                                     static_cast<int>(ctx->saved_data["padding"].toInt())});
    TORCH_CHECK(aligned16(dy), "max_pool backward: the incoming gradient is not 16-byte aligned");
    check_cuda(k::backward(kernel_dtype(dx), s, dy.data_ptr(), where.data_ptr<std::uint8_t>(),
                           dx.data_ptr(), at::cuda::getCurrentCUDAStream()),
               "backward kernel launch");
    return {dx, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

#endif  // ORCH_FUSED_BN_CUDA

void note_aten(const torch::Tensor& x) {
  static std::once_flag once;
  if (!x.is_cuda()) return;  // a CPU run: nothing to say, there is no other choice
  std::call_once(once, [&x] {
    std::cerr << "max_pool: our kernels do not take " << x.scalar_type() << " " << x.sizes()
              << (x.is_contiguous(at::MemoryFormat::ChannelsLast) ? " channels-last"
                                                                  : " (not channels-last)")
              << ", ATen's max pooling instead (max_pool_counters().aten counts it)\n";
  });
}

}  // namespace

MaxPoolImpl max_pool_impl_from_string(const std::string& name) {
  if (name == "aten") return MaxPoolImpl::kAten;
  if (name == "orch") return MaxPoolImpl::kOrch;
  throw std::invalid_argument("max_pool_impl '" + name + "' is not one of aten, orch");
}

const char* to_string(MaxPoolImpl impl) { return impl == MaxPoolImpl::kOrch ? "orch" : "aten"; }

bool orch_max_pool_supported(const torch::Tensor& x, const torch::nn::MaxPool2dOptions& o) {
#ifdef ORCH_FUSED_BN_CUDA
  const auto w = window_of(o);
  if (!w || !x.defined() || !x.is_cuda() || x.dim() != 4) return false;
  const auto t = x.scalar_type();
  if (t != torch::kFloat && t != torch::kHalf && t != torch::kBFloat16) return false;
  if (!x.is_contiguous(at::MemoryFormat::ChannelsLast) || !aligned16(x)) return false;
  return max_pool_kernels::supported(shape_of(x, *w), kernel_dtype(x));
#else
  (void)x;
  (void)o;
  return false;
#endif
}

torch::Tensor orch_max_pool(const torch::Tensor& x, const torch::nn::MaxPool2dOptions& o) {
  TORCH_CHECK(orch_max_pool_supported(x, o), "orch_max_pool: an input our kernels do not take (",
              x.scalar_type(), " ", x.sizes(), " on ", x.device(), ")");
#ifdef ORCH_FUSED_BN_CUDA
  const std::string unavailable =
      own_kernels_unavailable_reason(OwnKernels::kMaxPool, x.get_device());
  TORCH_CHECK(unavailable.empty(), "orch_max_pool: our kernels cannot run on ", x.device(), " (",
              unavailable, ")");
  const Window w = *window_of(o);
  return MaxPoolFunction::apply(x, w.kernel, w.stride, w.padding);
#else
  return {};
#endif
}

torch::Tensor max_pool(torch::nn::MaxPool2dImpl& pool, const torch::Tensor& x, MaxPoolImpl impl) {
  if (impl == MaxPoolImpl::kOrch) {
    if (orch_max_pool_supported(x, pool.options)) {
      // ATen's where the GPU cannot run ours (own_kernels_run_on counts and says why).
      if (own_kernels_run_on(OwnKernels::kMaxPool, x)) {
        ++g_orch;
        return orch_max_pool(x, pool.options);
      }
    } else {
      note_aten(x);
    }
  }
  ++g_aten;
  return pool.forward(x);
}

MaxPoolCounters max_pool_counters() { return {g_orch.load(), g_aten.load()}; }

}  // namespace orch::resnet
