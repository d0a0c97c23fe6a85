// ResNet blocks and network, following torchvision/models/resnet.py line by line.
#include "resnet.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/init.h>

#include <array>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "conv_bn_from_stats.h"
#include "dgrad_link.h"
#include "fused_bn.h"
#include "max_pool.h"
#include "residual_grad.h"
#include "stem_pool.h"
#include "wgrad_stream.h"

namespace orch::resnet {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv3x3(std::int64_t in, std::int64_t out, std::int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

nn::Conv2d conv1x1(std::int64_t in, std::int64_t out, std::int64_t stride = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false));
}

// Blocks per stage, as in torchvision.
std::array<std::int64_t, 4> stage_blocks(std::int64_t depth) {
  switch (depth) {
    case 18:
      return {2, 2, 2, 2};
    case 34:
      return {3, 4, 6, 3};
    case 50:
      return {3, 4, 6, 3};
    case 101:
      return {3, 4, 23, 3};
    case 152:
      return {3, 8, 36, 3};
  }
  throw std::invalid_argument("resnet depth " + std::to_string(depth) +
                              " is not one of 18, 34, 50, 101, 152");
}

/// The shortcut of a block with a downsample branch (conv1x1 + batch-norm): with `cudnn_bn`, its
/// batch-norm through batch_norm_cudnn (cuDNN's NHWC batch-norm where it takes the input).
torch::Tensor downsample_forward(nn::Sequential& ds, const torch::Tensor& x, bool cudnn_bn) {
  if (!cudnn_bn) return ds->forward(x);
  // Module::as, not Sequential::ptr<T>: AnyModule cannot name BatchNorm2d's inherited forward.
  auto* conv = ds->ptr(0)->as<nn::Conv2dImpl>();
  auto* bn = ds->ptr(1)->as<nn::BatchNorm2dImpl>();
  TORCH_CHECK(conv && bn, "a downsample branch that is not conv1x1 + BatchNorm2d");
  return batch_norm_cudnn(*bn, conv->forward(x));
}

}  // namespace

BasicBlockImpl::BasicBlockImpl(std::int64_t inplanes, std::int64_t planes, std::int64_t stride,
                               nn::Sequential ds, bool fused, FusedBnImpl impl)
    : fused_bn(fused), fused_bn_impl(impl) {
  conv1 = register_module("conv1", conv3x3(inplanes, planes, stride));
  bn1 = register_module("bn1", nn::BatchNorm2d(planes));
  conv2 = register_module("conv2", conv3x3(planes, planes, 1));
  bn2 = register_module("bn2", nn::BatchNorm2d(planes));
  if (ds) downsample = register_module("downsample", ds);
}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  if (fused_bn && conv_bn_stats) {
    const auto a = conv_bn_relu_from_stats(*conv1, *bn1, x, {}, fused_bn_impl, {}, {},
                                           [&] { return conv1(x); });
    const auto shortcut = downsample ? downsample_forward(downsample, x, downsample_bn_cudnn) : x;
    return conv_bn_relu_from_stats(*conv2, *bn2, a, shortcut, fused_bn_impl, {}, {},
                                   [&] { return conv2(a); });
  }
  if (fused_bn) {
    auto out = fused_bn_relu(*bn1, conv1(x), {}, fused_bn_impl);
    out = conv2(out);
    return fused_bn_relu(*bn2, out,
                         downsample ? downsample_forward(downsample, x, downsample_bn_cudnn) : x,
                         fused_bn_impl);
  }
  auto out = bn1(conv1(x)).relu_();
  out = bn2(conv2(out));
  out += downsample ? downsample->forward(x) : x;
  return out.relu_();
}

BottleneckImpl::BottleneckImpl(std::int64_t inplanes, std::int64_t planes, std::int64_t stride,
                               nn::Sequential ds, bool fused, FusedBnImpl impl, bool residual_grad)
    : fused_bn(fused), fused_bn_impl(impl), fused_residual_grad(residual_grad) {
  conv1 = register_module("conv1", conv1x1(inplanes, planes));
  bn1 = register_module("bn1", nn::BatchNorm2d(planes));
  conv2 = register_module("conv2", conv3x3(planes, planes, stride));
  bn2 = register_module("bn2", nn::BatchNorm2d(planes));
  conv3 = register_module("conv3", conv1x1(planes, planes * kExpansion));
  bn3 = register_module("bn3", nn::BatchNorm2d(planes * kExpansion));
  if (ds) downsample = register_module("downsample", ds);
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& x) {
  if (fused_bn) {
    // Identity blocks in training: bn3's fused backward hands the shortcut's gradient to conv1's,
    // which adds its own data gradient onto it (residual_grad.h). conv1 is 1x1, stride 1 here.
    const bool link =
        fused_residual_grad && !downsample && is_training() && torch::GradMode::is_enabled();
    const ResidualGradSinkPtr sink = link ? c10::make_intrusive<ResidualGradSink>() : nullptr;
    const auto conv1_unfused = [&] {
      return link ? conv1x1_with_residual_grad(x, conv1->weight, sink) : conv1(x);
    };
    if (conv_bn_stats) {
      // Each convolution computes its batch-norm's statistics (conv_bn_from_stats.h); same sink
      // protocol.
      const auto a =
          conv_bn_relu_from_stats(*conv1, *bn1, x, {}, fused_bn_impl, {}, sink, conv1_unfused);
      const auto b = conv_bn_relu_from_stats(*conv2, *bn2, a, {}, fused_bn_impl, {}, {},
                                             [&] { return conv2(a); });
      if (downsample && fused_downsample) {
        // Module::as, not Sequential::ptr<T>: see downsample_forward.
        auto* conv_s = downsample->ptr(0)->as<nn::Conv2dImpl>();
        auto* bn_s = downsample->ptr(1)->as<nn::BatchNorm2dImpl>();
        TORCH_CHECK(conv_s && bn_s, "a downsample branch that is not conv1x1 + BatchNorm2d");
        return conv_bn_add_shortcut_relu_from_stats(
            *conv3, *bn3, b, *conv_s, *bn_s, x, fused_bn_impl, [&] { return conv3(b); },
            [&] { return downsample_forward(downsample, x, downsample_bn_cudnn); });
      }
      const auto shortcut = downsample ? downsample_forward(downsample, x, downsample_bn_cudnn) : x;
      return conv_bn_relu_from_stats(*conv3, *bn3, b, shortcut, fused_bn_impl, sink, {},
                                     [&] { return conv3(b); });
    }
    auto out = fused_bn_relu(*bn1, conv1_unfused(), {}, fused_bn_impl);
    out = fused_bn_relu(*bn2, conv2(out), {}, fused_bn_impl);
    out = conv3(out);
    return fused_bn_relu(*bn3, out,
                         downsample ? downsample_forward(downsample, x, downsample_bn_cudnn) : x,
                         fused_bn_impl, sink);
  }
  auto out = bn1(conv1(x)).relu_();
  out = bn2(conv2(out)).relu_();
  out = bn3(conv3(out));
  out += downsample ? downsample->forward(x) : x;
  return out.relu_();
}

ResNetImpl::ResNetImpl(const ResNetOptions& o)
    : fused_bn_(o.fused_bn),
      fused_bn_impl_(o.fused_bn_impl),
      max_pool_impl_(o.max_pool_impl),
      relu_mask_(o.relu_mask),
      fused_residual_grad_(o.fused_residual_grad),
      downsample_bn_cudnn_(o.downsample_bn_cudnn),
      stem_conv_(o.stem_conv),
      conv_bn_stats_(o.conv_bn_stats),
      dgrad_graph_(o.dgrad_graph),
      fused_downsample_(o.fused_downsample),
      fused_stem_(o.fused_stem),
      wgrad_stream_(o.wgrad_stream) {
  const auto blocks = stage_blocks(o.depth);
  conv1 = register_module(
      "conv1",
      nn::Conv2d(nn::Conv2dOptions(o.in_channels, 64, 7).stride(2).padding(3).bias(false)));
  bn1 = register_module("bn1", nn::BatchNorm2d(64));
  maxpool = register_module("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  const bool basic = o.depth < 50;
  auto layer = [&](std::int64_t planes, std::int64_t n, std::int64_t stride) {
    return basic ? make_layer<BasicBlock>(planes, n, stride)
                 : make_layer<Bottleneck>(planes, n, stride);
  };
  layer1 = register_module("layer1", layer(64, blocks[0], 1));
  layer2 = register_module("layer2", layer(128, blocks[1], 2));
  layer3 = register_module("layer3", layer(256, blocks[2], 2));
  layer4 = register_module("layer4", layer(512, blocks[3], 2));
  avgpool = register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
  const std::int64_t expansion = basic ? BasicBlockImpl::kExpansion : BottleneckImpl::kExpansion;
  fc = register_module("fc", nn::Linear(512 * expansion, o.num_classes));

  // torchvision's initialisation: Kaiming (fan_out, relu) for convolutions, BN to identity.
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* conv = m->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    }
  }
}

template <class Block>
nn::Sequential ResNetImpl::make_layer(std::int64_t planes, std::int64_t blocks,
                                      std::int64_t stride) {
  constexpr std::int64_t expansion = Block::Impl::kExpansion;
  nn::Sequential downsample{nullptr};
  if (stride != 1 || inplanes_ != planes * expansion) {
    downsample = nn::Sequential(conv1x1(inplanes_, planes * expansion, stride),
                                nn::BatchNorm2d(planes * expansion));
  }
  nn::Sequential layer;
  const auto block = [&](std::int64_t stride_, nn::Sequential ds) {
    Block b = [&] {
      if constexpr (std::is_same_v<Block, Bottleneck>) {
        return Block(inplanes_, planes, stride_, ds, fused_bn_, fused_bn_impl_,
                     fused_residual_grad_);
      } else {
        return Block(inplanes_, planes, stride_, ds, fused_bn_, fused_bn_impl_);
      }
    }();
    b->downsample_bn_cudnn = fused_bn_ && downsample_bn_cudnn_;
    b->conv_bn_stats = fused_bn_ && conv_bn_stats_;
    if constexpr (std::is_same_v<Block, Bottleneck>) {
      b->fused_downsample = fused_bn_ && conv_bn_stats_ && fused_downsample_;
    }
    return b;
  };
  layer->push_back(block(stride, downsample));
  inplanes_ = planes * expansion;
  for (std::int64_t i = 1; i < blocks; ++i) layer->push_back(block(1, nn::Sequential{nullptr}));
  return layer;
}

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  const ReluMaskScope relu_mask(relu_mask_);
  const DgradGraphScope dgrad_graph(fused_bn_ && conv_bn_stats_ ? dgrad_graph_
                                                                : DgradGraphMode::kOff);
  const WgradStreamScope wgrad_stream(fused_bn_ && conv_bn_stats_ && wgrad_stream_);
  x = stem_conv_forward(*conv1, x, stem_conv_);
  if (fused_bn_ && fused_stem_) {
    x = stem_bn_relu_pool(*bn1, *maxpool, x, fused_bn_impl_, max_pool_impl_);
  } else {
    x = max_pool(*maxpool, fused_bn_ ? fused_bn_relu(*bn1, x, {}, fused_bn_impl_) : bn1(x).relu_(),
                 max_pool_impl_);
  }
  x = layer4->forward(layer3->forward(layer2->forward(layer1->forward(x))));
  x = torch::flatten(avgpool(x), 1);
  return fc(x);
}

}  // namespace orch::resnet
