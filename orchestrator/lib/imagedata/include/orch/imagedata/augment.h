// The training augmentation of one sample, torch-free: RandomResizedCrop(scale 0.08..1, ratio
// 3/4..4/3) and a horizontal flip with probability 1/2, drawn from the sample's own generator,
// applied to an image file (a JPEG decoding only the crop, at reduced DCT scale; a PNG whole) or
// to a cached image.
#pragma once

#include <cstddef>
#include <cstdint>

#include "orch/imagedata/sample_random.h"

namespace orch::imagedata {

struct AugmentChoice {
  CropBox crop;
  bool flip = false;
};

/// The crop and flip of one sample of a width x height image.
AugmentChoice choose_augment(int width, int height, SampleRng& rng);

/// Decodes the image's random crop (JPEG or PNG, by content: image_codec.h) and writes
/// out_size x out_size RGB (HWC) into `out`. Throws DatasetError, with its reason, for an
/// unreadable, corrupt or unsupported file.
void augment_image(const std::uint8_t* data, std::size_t size, SampleRng& rng, int out_size,
                   std::uint8_t* out);
/// The name augment_image had when only JPEGs were read; the same function.
inline void augment_jpeg(const std::uint8_t* data, std::size_t size, SampleRng& rng, int out_size,
                         std::uint8_t* out) {
  augment_image(data, size, rng, out_size, out);
}

/// The same from an already decoded size x size RGB image (the cache's).
void augment_rgb(const std::uint8_t* pixels, int width, int height, SampleRng& rng, int out_size,
                 std::uint8_t* out);

}  // namespace orch::imagedata
