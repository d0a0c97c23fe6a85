// Host helpers for launching our batch-norm kernels from LibTorch tensors, shared by the fused
// batch-norm (fused_bn.cpp) and the downsample block's two batch-norms (dual_bn.cpp). Only in
// builds with the kernels (ORCH_FUSED_BN_CUDA).
#pragma once

#ifdef ORCH_FUSED_BN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <torch/types.h>

#include <cstdint>
#include <initializer_list>

#include "fused_bn_kernels.h"

namespace orch::resnet {

inline kernels::Dtype kernel_dtype(const torch::Tensor& x) {
  return x.scalar_type() == torch::kHalf ? kernels::Dtype::kHalf : kernels::Dtype::kBFloat16;
}

inline bool aligned16(const torch::Tensor& t) {
  return !t.defined() || reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0;
}

inline void check_cuda(cudaError_t err, const char* what) {
  TORCH_CHECK(err == cudaSuccess, "fused_bn: ", what, " failed: ", cudaGetErrorName(err), " (",
              cudaGetErrorString(err), ")");
}

/// The kernels' tiling for a [rows x channels] tensor; the 16-byte path only where every
/// tensor given is 16-byte aligned.
inline kernels::Tiling tiling_for(std::int64_t rows, std::int64_t channels,
                                  std::initializer_list<torch::Tensor> tensors) {
  bool vec8 = true;
  for (const auto& t : tensors) vec8 = vec8 && aligned16(t);
  return kernels::make_tiling(rows, channels,
                              at::cuda::getCurrentDeviceProperties()->multiProcessorCount, vec8);
}

}  // namespace orch::resnet
#endif  // ORCH_FUSED_BN_CUDA
