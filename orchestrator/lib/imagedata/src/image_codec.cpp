#include "orch/imagedata/image_codec.h"

#include <algorithm>
#include <cstring>

#include "orch/imagedata/dataset_error.h"
#include "orch/imagedata/png_codec.h"

namespace orch::imagedata {
namespace {

bool starts_with(const std::uint8_t* data, std::size_t size, const char* magic, std::size_t n,
                 std::size_t at = 0) {
  return size >= at + n && std::memcmp(data + at, magic, n) == 0;
}

// A file that is neither JPEG nor PNG: say what it is, so "GIF data in a .JPEG file" reads as
// such and not as a corrupt JPEG.
[[noreturn]] void refuse(const std::uint8_t* data, std::size_t size) {
  if (size == 0) throw DatasetError(kReasonEmpty, "empty file");
  const std::string kind = describe_format(data, size);
  if (kind == "unknown" || kind == "text" || kind == "HTML")
    throw DatasetError(
        kReasonNotAnImage,
        "not an image (" +
            (kind == "unknown" ? std::string("neither JPEG nor PNG") : kind + " data") +
            "); orch reads JPEG and PNG");
  throw DatasetError(kReasonUnsupported,
                     kind + " data, which orch does not decode (it reads JPEG and PNG)");
}

}  // namespace

ImageFormat sniff_format(const std::uint8_t* data, std::size_t size) {
  // FF D8 FF: SOI and the next marker's first byte, as file(1) and PIL test.
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) return ImageFormat::kJpeg;
  if (starts_with(data, size, "\x89PNG\r\n\x1a\n", 8)) return ImageFormat::kPng;
  return ImageFormat::kOther;
}

std::string describe_format(const std::uint8_t* data, std::size_t size) {
  switch (sniff_format(data, size)) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kOther:
      break;
  }
  if (starts_with(data, size, "GIF87a", 6) || starts_with(data, size, "GIF89a", 6)) return "GIF";
  if (starts_with(data, size, "RIFF", 4) && starts_with(data, size, "WEBP", 4, 8)) return "WebP";
  if (starts_with(data, size, "BM", 2)) return "BMP";
  if (starts_with(data, size, "II*\0", 4) || starts_with(data, size, "MM\0*", 4)) return "TIFF";
  if (starts_with(data, size, "\0\0\0\x0cjP  ", 8)) return "JPEG 2000";
  if (starts_with(data, size, "ftypavif", 8, 4) || starts_with(data, size, "ftypheic", 8, 4))
    return "HEIF/AVIF";
  const std::size_t n = std::min<std::size_t>(size, 512);
  std::size_t i = 0;
  while (i < n && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) ++i;
  if (i < n && data[i] == '<') return "HTML";
  if (n > 0 && std::all_of(data, data + n, [](std::uint8_t c) {
        return c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c < 0x7f) || c >= 0x80;
      }))
    return "text";
  return "unknown";
}

void require_image_head(const std::uint8_t* data, std::size_t size) {
  if (sniff_format(data, size) == ImageFormat::kOther) refuse(data, size);
}

JpegSize read_image_size(const std::uint8_t* data, std::size_t size) {
  switch (sniff_format(data, size)) {
    case ImageFormat::kJpeg:
      return read_jpeg_size(data, size);
    case ImageFormat::kPng:
      return read_png_size(data, size);
    case ImageFormat::kOther:
      break;
  }
  refuse(data, size);
}

DecodedRegion decode_image_region(const std::uint8_t* data, std::size_t size, const CropBox& box,
                                  int min_width, int min_height, bool allow_scaling) {
  switch (sniff_format(data, size)) {
    case ImageFormat::kJpeg:
      return decode_jpeg_region(data, size, box, min_width, min_height, allow_scaling);
    case ImageFormat::kPng: {
      DecodedRegion out;
      out.image = decode_png(data, size);
      CropBox b = box;
      if (b.w <= 0 || b.h <= 0) b = {0, 0, out.image.width, out.image.height};
      out.crop = {static_cast<double>(b.x), static_cast<double>(b.y), static_cast<double>(b.w),
                  static_cast<double>(b.h)};
      return out;
    }
    case ImageFormat::kOther:
      break;
  }
  refuse(data, size);
}

RgbImage decode_image(const std::uint8_t* data, std::size_t size) {
  return decode_image_region(data, size, CropBox{}, 0, 0, false).image;
}

}  // namespace orch::imagedata
