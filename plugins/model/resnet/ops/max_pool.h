// The resnet stem's 3x3 stride-2 max pooling, either ATen's (`max_pool_impl: aten`) or our
// channels-last CUDA kernels (`orch`, max_pool_kernels.h), which give bit-identical outputs and
// gradients with a one-byte winner index instead of ATen's int64 one, and a gathering backward.
// Inputs our kernels do not take (CPU, NCHW, channels not a multiple of 16 bytes, no CUDA
// compiler at build time) run ATen's, so the result is the same either way.
#pragma once

#include <torch/nn/modules/pooling.h>

#include <cstdint>
#include <string>

namespace orch::resnet {

enum class MaxPoolImpl {
  kAten,  ///< torch::max_pool2d
  kOrch,  ///< max_pool_kernels.cu where it takes the input, ATen's elsewhere
};

/// "aten" or "orch"; throws std::invalid_argument naming the allowed values otherwise.
MaxPoolImpl max_pool_impl_from_string(const std::string& name);
const char* to_string(MaxPoolImpl impl);

/// pool(x) with pool's options (kernel, stride, padding; dilation 1 and floor mode for ours).
torch::Tensor max_pool(torch::nn::MaxPool2dImpl& pool, const torch::Tensor& x, MaxPoolImpl impl);

/// Whether our kernels take x with these options (CUDA build, 4-d channels-last CUDA tensor of
/// float, half or bfloat16, channels a multiple of 16 bytes, square window <= 15, dilation 1,
/// no ceil mode, padding <= half the window).
bool orch_max_pool_supported(const torch::Tensor& x, const torch::nn::MaxPool2dOptions& o);

/// Our max pooling on raw tensors (what the tests compare with at::max_pool2d); requires
/// orch_max_pool_supported.
torch::Tensor orch_max_pool(const torch::Tensor& x, const torch::nn::MaxPool2dOptions& o);

/// Calls of max_pool that ran each implementation, in this copy of the library.
struct MaxPoolCounters {
  std::int64_t orch = 0;  ///< our kernels
  std::int64_t aten = 0;  ///< ATen's, asked for or as the fallback
};
MaxPoolCounters max_pool_counters();

}  // namespace orch::resnet
