// The resnet stem's convolution variants (stem_conv.h). The space_to_depth algebra: with the
// input padded by 3 on top/left (and 3 or 4 on bottom/right, to an even size) and the 7x7 kernel
// extended to 8x8 with zeros,
//   out[o, y, x] = sum_{c, i, j} w8[o, c, i, j] * in_p[c, 2y + i, 2x + j]
// and writing i = 2a + p, j = 2b + q (a, b in 0..3; p, q in 0..1),
//   in_p[c, 2(y + a) + p, 2(x + b) + q] = s2d[(c, p, q), y + a, x + b]
// so out = conv(s2d, w2, stride 1, no padding) with w2[o, (c, p, q), a, b] = w8[o, c, 2a+p, 2b+q].
// Output size: (H + 6 + odd) / 2 - 3 = floor((H - 1) / 2) + 1, the strided convolution's.
#include "stem_conv.h"

#include <ATen/autocast_mode.h>

#include <stdexcept>

namespace orch::resnet {
namespace {

torch::Tensor cast_for_autocast(const torch::Tensor& x) {
  if (x.is_cuda() && at::autocast::is_autocast_enabled(at::kCUDA)) {
    return x.to(at::autocast::get_autocast_dtype(at::kCUDA));
  }
  return x;
}

torch::Tensor conv(const torch::Tensor& x, const torch::Tensor& w, torch::IntArrayRef stride,
                   torch::IntArrayRef padding) {
  return at::conv2d(x, w, {}, stride, padding);
}

bool is_resnet_stem(const torch::nn::Conv2dImpl& c) {
  const auto& o = c.options;
  const auto* pad = std::get_if<torch::ExpandingArray<2>>(&o.padding());
  return !c.bias.defined() && o.groups() == 1 && (*o.kernel_size())[0] == 7 &&
         (*o.kernel_size())[1] == 7 && (*o.stride())[0] == 2 && (*o.stride())[1] == 2 &&
         (*o.dilation())[0] == 1 && (*o.dilation())[1] == 1 && pad != nullptr && (**pad)[0] == 3 &&
         (**pad)[1] == 3;
}

}  // namespace

StemConv stem_conv_from_string(const std::string& name) {
  if (name == "auto") return StemConv::kAuto;
  if (name == "direct") return StemConv::kDirect;
  if (name == "pad4") return StemConv::kPad4;
  if (name == "pad8") return StemConv::kPad8;
  if (name == "space_to_depth") return StemConv::kSpaceToDepth;
  throw std::invalid_argument("stem_conv '" + name +
                              "' is not one of auto, direct, pad4, pad8, space_to_depth");
}

const char* to_string(StemConv how) {
  switch (how) {
    case StemConv::kAuto:
      return "auto";
    case StemConv::kDirect:
      return "direct";
    case StemConv::kPad4:
      return "pad4";
    case StemConv::kPad8:
      return "pad8";
    case StemConv::kSpaceToDepth:
      return "space_to_depth";
  }
  return "?";
}

torch::Tensor space_to_depth_input(const torch::Tensor& x) {
  const std::int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const std::int64_t c2 = c + c % 2;  // 4 * c2 channels: a multiple of 8 (16-byte vectors)
  // constant_pad_nd's list runs from the last dimension: W left/right, H top/bottom, C front/back.
  const auto padded = at::constant_pad_nd(x, {3, 3 + w % 2, 3, 3 + h % 2, 0, c2 - c});
  const std::int64_t hp = (h + 6 + h % 2) / 2, wp = (w + 6 + w % 2) / 2;
  // NHWC view, 2x2 blocks split out, folded into channels as (c, p, q); one copy.
  return padded.permute({0, 2, 3, 1})
      .reshape({n, hp, 2, wp, 2, c2})
      .permute({0, 1, 3, 5, 2, 4})
      .reshape({n, hp, wp, c2 * 4})
      .permute({0, 3, 1, 2});  // logical N x 4c2 x hp x wp, channels-last in memory
}

torch::Tensor space_to_depth_weight(const torch::Tensor& wt) {
  const std::int64_t o = wt.size(0), c = wt.size(1);
  const std::int64_t c2 = c + c % 2;
  const auto w8 = at::constant_pad_nd(wt, {0, 1, 0, 1, 0, c2 - c});  // 7x7 -> 8x8, zeros after
  return w8
      .reshape({o, c2, 4, 2, 4, 2})  // (o, c, a, p, b, q): i = 2a + p, j = 2b + q
      .permute({0, 1, 3, 5, 2, 4})   // (o, c, p, q, a, b)
      .reshape({o, c2 * 4, 4, 4});
}

StemConv resolve_stem_conv(StemConv how, const torch::Tensor& x) {
  if (how != StemConv::kAuto) return how;
  const bool bf16 = x.scalar_type() == torch::kBFloat16 ||
                    (x.is_cuda() && at::autocast::is_autocast_enabled(at::kCUDA) &&
                     at::autocast::get_autocast_dtype(at::kCUDA) == torch::kBFloat16);
  return bf16 ? StemConv::kSpaceToDepth : StemConv::kDirect;
}

torch::Tensor stem_conv_forward(torch::nn::Conv2dImpl& c, torch::Tensor x, StemConv how) {
  how = resolve_stem_conv(how, x);
  if (how == StemConv::kDirect || x.dim() != 4) return c.forward(x);
  const auto format = x.suggest_memory_format();
  const auto& weight = c.weight;
  if (how == StemConv::kSpaceToDepth) {
    if (!is_resnet_stem(c)) return c.forward(x);
    x = cast_for_autocast(x);
    const auto s2d = space_to_depth_input(x).contiguous(format);
    const auto w2 = space_to_depth_weight(weight).contiguous(weight.suggest_memory_format());
    return conv(s2d, w2, {1, 1}, {0, 0});
  }
  const std::int64_t extra = (how == StemConv::kPad4 ? 4 : 8) - x.size(1);
  if (extra <= 0) return c.forward(x);
  x = cast_for_autocast(x);
  x = at::constant_pad_nd(x, {0, 0, 0, 0, 0, extra}).contiguous(format);
  const auto w_padded = at::constant_pad_nd(weight, {0, 0, 0, 0, 0, extra})
                            .contiguous(weight.suggest_memory_format());
  const auto& o = c.options;
  const torch::ExpandingArray<2> padding = std::get<torch::ExpandingArray<2>>(o.padding());
  return at::conv2d(x, w_padded, c.bias, *o.stride(), *padding, *o.dilation(), o.groups());
}

}  // namespace orch::resnet
