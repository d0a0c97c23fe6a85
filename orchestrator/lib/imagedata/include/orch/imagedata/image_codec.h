// Decoding whatever image a dataset file holds, by its content rather than its name: ImageNet's
// training set has a PNG named .JPEG and CMYK JPEGs. JPEG (baseline, progressive, grayscale,
// RGB, CMYK and YCCK) goes to libjpeg-turbo (jpeg_codec.h), PNG to libpng (png_codec.h); anything
// else is a DatasetError that says what the data is ("GIF data", "not an image").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "orch/imagedata/jpeg_codec.h"

namespace orch::imagedata {

enum class ImageFormat { kJpeg, kPng, kOther };

/// The format by the file's first bytes.
ImageFormat sniff_format(const std::uint8_t* data, std::size_t size);

/// What the data looks like, for messages: "JPEG", "PNG", "GIF", "WebP", "BMP", "TIFF", "HTML",
/// "text", or "unknown".
std::string describe_format(const std::uint8_t* data, std::size_t size);

/// Throws the DatasetError read_image_size gives for data that is neither JPEG nor PNG, told
/// from its first bytes alone (the first 512 are enough): a file can be refused unread.
void require_image_head(const std::uint8_t* data, std::size_t size);

/// The image's dimensions from its header; throws DatasetError (with a reason) otherwise.
JpegSize read_image_size(const std::uint8_t* data, std::size_t size);

/// decode_jpeg_region for any supported format. A PNG is decoded whole (it has no DCT scales
/// nor random access to rows) and its `crop` is the box within the full image.
DecodedRegion decode_image_region(const std::uint8_t* data, std::size_t size, const CropBox& box,
                                  int min_width, int min_height, bool allow_scaling = true);

/// The whole image as RGB.
RgbImage decode_image(const std::uint8_t* data, std::size_t size);

}  // namespace orch::imagedata
