// How the resnet's stem convolution (7x7, stride 2, padding 3, 3 input channels) runs: the
// parameter `stem_conv`. cuDNN has a fast "first layer" kernel for 3-channel fp16 input only; for
// bf16 it runs a generic kernel about 2-3x slower (forward and weight gradient, in a per-kernel
// profile of a ResNet50 step). Every variant computes the same sums; only the kernel cuDNN is
// given changes:
//   auto            space_to_depth for bf16 (under autocast or a bf16 input), direct otherwise:
//                   what measured fastest in training throughput (bf16 faster with
//                   space_to_depth; fp16 a tie, so it keeps what ran before)
//   direct          conv1 as it is
//   pad4, pad8      input and weight zero-padded to 4 / 8 channels (measured: no faster)
//   space_to_depth  the 7x7 stride-2 convolution rewritten as a 4x4 stride-1 one over 2x2
//                   pixel blocks folded into channels (MLPerf's trick for the stem): input
//                   N x C x H x W -> N x 4C' x H'/2 x W'/2 (C' = C rounded up to even), weight
//                   padded to 8x8 and folded the same way; a plain implicit GEMM with K = 256.
#pragma once

#include <torch/nn/modules/conv.h>

#include <string>

namespace orch::resnet {

enum class StemConv { kAuto, kDirect, kPad4, kPad8, kSpaceToDepth };

/// "auto", "direct", "pad4", "pad8" or "space_to_depth"; throws std::invalid_argument naming them.
StemConv stem_conv_from_string(const std::string& name);
const char* to_string(StemConv how);

/// conv(x) computed as `how` says. Falls back to conv.forward(x) where the variant does not
/// apply (not a 4-d input; for space_to_depth a convolution other than 7x7 / stride 2 / padding
/// 3 / no dilation, groups or bias). Under CUDA autocast the input is cast to autocast's dtype
/// before it is padded or folded (the convolution would cast it anyway), so the copies move
/// half the bytes.
torch::Tensor stem_conv_forward(torch::nn::Conv2dImpl& conv, torch::Tensor x, StemConv how);

/// What kAuto resolves to for this input (the others resolve to themselves).
StemConv resolve_stem_conv(StemConv how, const torch::Tensor& x);

/// The space_to_depth rewrite on raw tensors (what the tests check against conv2d): x's
/// channels rounded up to even and 2x2 pixel blocks folded into channels, the weight padded to
/// 8x8 and folded the same way, then a 4x4 stride-1 convolution without padding.
torch::Tensor space_to_depth_input(const torch::Tensor& x);
torch::Tensor space_to_depth_weight(const torch::Tensor& w);

}  // namespace orch::resnet
