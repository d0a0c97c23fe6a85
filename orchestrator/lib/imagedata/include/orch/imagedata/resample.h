// Resizing a crop to the network's input, and ImageNet normalisation into float: the CPU half of
// the training augmentation, shared by the JPEG and cached loaders.
#pragma once

#include <cstdint>

#include "orch/imagedata/jpeg_codec.h"

namespace orch::imagedata {

/// Bilinear resampling of `box` of `src` to out_w x out_h RGB, mirrored left-right when `flip`.
/// Pixel centres are aligned (like PIL/torchvision without antialiasing); callers keep the
/// scale factor under 2 (the DCT scale does the rest), where antialiasing changes little.
void resample_bilinear(const RgbImage& src, const BoxF& box, int out_w, int out_h, bool flip,
                       std::uint8_t* out);
void resample_bilinear(const std::uint8_t* src, int src_w, int src_h, const BoxF& box, int out_w,
                       int out_h, bool flip, std::uint8_t* out);

/// (x / 255 - mean) / std per channel with ImageNet's mean and std, from HWC uint8 into float:
/// CHW (planar) or, when `channels_last`, HWC.
void normalize_imagenet(const std::uint8_t* hwc, int width, int height, bool channels_last,
                        float* out);

constexpr float kImagenetMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kImagenetStd[3] = {0.229f, 0.224f, 0.225f};

}  // namespace orch::imagedata
