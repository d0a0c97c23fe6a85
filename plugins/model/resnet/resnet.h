// torchvision's ResNet in LibTorch: the same architecture (v1.5: stride on the 3x3 conv) and the
// same parameter names, so parameter counts and weights compare one to one with Python
// (ResNet50: 25,557,032 parameters at 1000 classes). `fused_bn` (and `fused_bn_impl`,
// `fused_residual_grad`, `downsample_bn_cudnn`, `conv_bn_stats`, `fused_stem`) change how
// batch-norm + ReLU
// (+ residual add) run, `max_pool_impl` how the stem's max pooling runs and `stem_conv` how its
// convolution runs, never which parameters and buffers exist: the operations they pick live in
// ops/.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include <cstdint>

#include "dgrad_link.h"
#include "fused_bn.h"
#include "max_pool.h"
#include "stem_conv.h"

namespace orch::resnet {

/// Two 3x3 convolutions; ResNet18 and ResNet34.
struct BasicBlockImpl : torch::nn::Module {
  static constexpr std::int64_t kExpansion = 1;
  BasicBlockImpl(std::int64_t inplanes, std::int64_t planes, std::int64_t stride,
                 torch::nn::Sequential downsample, bool fused_bn = false,
                 FusedBnImpl fused_bn_impl = FusedBnImpl::kOrch);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential downsample{nullptr};
  bool fused_bn = false;  ///< batch-norm + ReLU (+ add) through fused_bn_relu
  FusedBnImpl fused_bn_impl = FusedBnImpl::kOrch;  ///< which fused implementation
  bool downsample_bn_cudnn = false;  ///< with fused_bn: the shortcut's batch-norm, see downsample()
  /// With fused_bn: statistics from the convolutions (conv_bn_from_stats.h).
  bool conv_bn_stats = false;
};
TORCH_MODULE(BasicBlock);

/// 1x1 reduce, 3x3 (carrying the stride), 1x1 expand; ResNet50 and deeper.
struct BottleneckImpl : torch::nn::Module {
  static constexpr std::int64_t kExpansion = 4;
  BottleneckImpl(std::int64_t inplanes, std::int64_t planes, std::int64_t stride,
                 torch::nn::Sequential downsample, bool fused_bn = false,
                 FusedBnImpl fused_bn_impl = FusedBnImpl::kOrch, bool fused_residual_grad = false);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};
  bool fused_bn = false;  ///< batch-norm + ReLU (+ add) through fused_bn_relu
  FusedBnImpl fused_bn_impl = FusedBnImpl::kOrch;  ///< which fused implementation
  /// With fused_bn, in identity blocks: conv1's data gradient added onto the shortcut's in one
  /// GEMM (residual_grad.h) instead of autograd's separate add.
  bool fused_residual_grad = false;
  bool downsample_bn_cudnn = false;  ///< with fused_bn: the shortcut's batch-norm, see downsample()
  /// With fused_bn: statistics from the convolutions (conv_bn_from_stats.h).
  bool conv_bn_stats = false;
  /// With conv_bn_stats, in a downsample block: bn3, the shortcut's batch-norm, the add and the
  /// ReLU in one pass each way (dual_bn.h).
  bool fused_downsample = false;
};
TORCH_MODULE(Bottleneck);

/// How a ResNet is built. These initial values are the network library's, for code that builds
/// one directly (the kernel tests compare each path against them): each orch path off or at its
/// first implementation. They are not the plugin's defaults, which only its schema states
/// (schema.cpp): the plugin's create() sets every field below from its parameters or context.
struct ResNetOptions {
  std::int64_t depth = 50;          ///< 18, 34, 50, 101 or 152
  std::int64_t num_classes = 1000;  ///< width of the final fully connected layer
  std::int64_t in_channels = 3;     ///< channels of the input images
  bool fused_bn = false;            ///< fused channels-last batch-norm + ReLU (+ add); fused_bn.h
  FusedBnImpl fused_bn_impl = FusedBnImpl::kOrch;  ///< ours or cuDNN's, where fused_bn runs fused
  MaxPoolImpl max_pool_impl = MaxPoolImpl::kOrch;  ///< the stem's max pooling; max_pool.h
  bool fused_residual_grad = false;  ///< with fused_bn: residual_grad.h (bottleneck blocks)
  /// With fused_bn: the downsample branches' batch-norm through cuDNN's NHWC batch-norm
  /// (batch_norm_cudnn) instead of the module's forward, which runs ATen's own kernels for bf16.
  bool downsample_bn_cudnn = false;
  StemConv stem_conv = StemConv::kDirect;  ///< how the stem convolution runs; stem_conv.h
  /// The option `conv_bn_stats`. With fused_bn: each block convolution that a fused batch-norm
  /// follows computes that batch-norm's statistics in its epilogue (fp16; conv_bn_from_stats.h).
  bool conv_bn_stats = false;
  /// The option `relu_mask`. With fused_bn, our kernels: the backward reads ReLU's 1-bit mask
  /// instead of the output (ReluMaskScope, fused_bn.h).
  bool relu_mask = true;
  /// The option `dgrad_graph`. With conv_bn_stats: each fused batch-norm's backward computes the
  /// next convolution's data gradient in one cuDNN graph where that measures faster
  /// (dgrad_link.h).
  DgradGraphMode dgrad_graph = DgradGraphMode::kOff;
  /// The option `fused_downsample`. With conv_bn_stats: a downsample block's two batch-norms,
  /// the add and the ReLU in one pass each way (dual_bn.h).
  bool fused_downsample = false;
  /// The option `fused_stem`. With fused_bn: the stem's batch-norm, ReLU and max pooling in
  /// one operation (stem_pool.h).
  bool fused_stem = false;
  /// The option `wgrad_stream`. With conv_bn_stats: those convolutions' weight gradients on a
  /// second stream (wgrad_stream.h).
  bool wgrad_stream = false;
};

struct ResNetImpl : torch::nn::Module {
  explicit ResNetImpl(const ResNetOptions& options);
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::MaxPool2d maxpool{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  torch::nn::AdaptiveAvgPool2d avgpool{nullptr};
  torch::nn::Linear fc{nullptr};

 private:
  template <class Block>
  torch::nn::Sequential make_layer(std::int64_t planes, std::int64_t blocks, std::int64_t stride);
  std::int64_t inplanes_ = 64;
  bool fused_bn_ = false;
  FusedBnImpl fused_bn_impl_ = FusedBnImpl::kOrch;
  MaxPoolImpl max_pool_impl_ = MaxPoolImpl::kOrch;
  bool relu_mask_ = true;
  bool fused_residual_grad_ = false;
  bool downsample_bn_cudnn_ = false;
  StemConv stem_conv_ = StemConv::kDirect;
  bool conv_bn_stats_ = false;
  DgradGraphMode dgrad_graph_ = DgradGraphMode::kOff;
  bool fused_downsample_ = false;
  bool fused_stem_ = false;
  bool wgrad_stream_ = false;
};
TORCH_MODULE(ResNet);

}  // namespace orch::resnet
