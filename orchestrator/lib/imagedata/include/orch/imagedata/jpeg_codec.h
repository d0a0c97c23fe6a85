// JPEG encode and decode with libjpeg-turbo's classic API. The decoder reads only what a crop
// needs: it picks the smallest DCT scale of those libjpeg-turbo runs with SIMD (1/8, 2/8, 4/8,
// else 8/8) that keeps the crop at least as large as the output, skips the rows above the crop
// (jpeg_skip_scanlines) and decodes only the columns around it (jpeg_crop_scanline). libjpeg's
// corrupt-data warnings are errors here: a truncated file fails instead of decoding to grey.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "orch/imagedata/sample_random.h"

namespace orch::imagedata {

/// Interleaved 8-bit RGB pixels, row after row.
struct RgbImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  ///< width * height * 3
};

/// A rectangle in (fractional) pixels of some image.
struct BoxF {
  double x = 0, y = 0, w = 0, h = 0;
};

/// A decoded part of a JPEG, and where the requested crop lies in it.
struct DecodedRegion {
  RgbImage image;
  BoxF crop;          ///< the requested crop in `image`'s pixels
  int scale_num = 8;  ///< the DCT scale used, over 8
};

struct JpegSize {
  int width = 0, height = 0;
};

/// Encodes RGB pixels at `quality` (1..100), 4:2:0 chroma subsampling like most cameras.
std::vector<std::uint8_t> encode_jpeg(const RgbImage& image, int quality);

/// The dimensions from the header; throws DatasetError when it is not a readable JPEG.
JpegSize read_jpeg_size(const std::uint8_t* data, std::size_t size);

/// The whole image at full scale (the reference path). `fancy_upsampling` false replicates
/// chroma samples instead of interpolating them (libjpeg's do_fancy_upsampling, on by default
/// and in PIL): what GPU decoders such as nvJPEG do, so their output can be compared.
RgbImage decode_jpeg(const std::uint8_t* data, std::size_t size, bool fancy_upsampling = true);

/// The crop `box` (full-size pixels), decoded at the smallest DCT scale that keeps it at least
/// min_width x min_height, with one pixel of margin for bilinear sampling. `allow_scaling`
/// false decodes at full scale (still cropped).
DecodedRegion decode_jpeg_region(const std::uint8_t* data, std::size_t size, const CropBox& box,
                                 int min_width, int min_height, bool allow_scaling = true,
                                 bool fancy_upsampling = true);

}  // namespace orch::imagedata
