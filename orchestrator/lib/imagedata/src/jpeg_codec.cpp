#include "orch/imagedata/jpeg_codec.h"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>

// jpeglib.h uses size_t and FILE without declaring them: it must follow <cstdio>, where a
// formatter's include sorting would not leave it.
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include "orch/imagedata/dataset_error.h"

namespace orch::imagedata {
namespace {

// libjpeg reports errors through error_exit, which must not return: we longjmp back to the
// call that set up `jump` and throw from there, after libjpeg's state is destroyed.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Level -1 is a corrupt-data warning ("Premature end of JPEG file", "Corrupt JPEG data"):
// treated as an error so damaged files are never silently decoded. Trace messages are ignored.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);
}

void set_up_errors(jpeg_decompress_struct& cinfo, ErrorManager& err) {
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  err.message[0] = '\0';
}

// The reason for a libjpeg message code: which words the skip counters and messages use.
const char* reason_of(int code) {
  switch (code) {
    case JWRN_JPEG_EOF:  // libjpeg's memory source reports running out of data this way
      return kReasonTruncated;
    case JERR_BAD_PRECISION:  // 12- and 16-bit JPEGs: this is the 8-bit API
    case JERR_NOT_COMPILED:
    case JERR_NOTIMPL:
    case JERR_CONVERSION_NOTIMPL:
      return kReasonUnsupported;
    case JERR_NO_SOI:
      return kReasonNotAnImage;
    default:
      return kReasonCorrupt;
  }
}

[[noreturn]] void fail(const char* what, const ErrorManager& err) {
  const char* reason = reason_of(err.pub.msg_code);
  const std::string message = err.message[0] ? err.message : "unknown libjpeg error";
  if (reason == kReasonTruncated)
    throw DatasetError(reason, std::string("truncated JPEG: ") + message);
  if (reason == kReasonUnsupported)
    throw DatasetError(reason, std::string("unsupported JPEG: ") + message);
  throw DatasetError(reason, std::string(what) + ": " + message);
}

// PIL's CMYK to RGB, as torchvision's ImageFolder (through PIL) gives it. PIL reads every
// 4-component JPEG with Adobe's convention, the samples stored inverted (Photoshop writes
// them so, and nearly every CMYK JPEG comes from it), un-inverts them, and converts with
// R = (255 - K) - (C * (255 - K)) / 255 in its rounding MULDIV255; in stored values that is
// k - muldiv255(255 - c, k). YCCK is CMYK after libjpeg's colour transform, the same from here.
inline std::uint8_t muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<std::uint8_t>(((t >> 8) + t) >> 8);
}
void cmyk_to_rgb(const JSAMPLE* cmyk, int width, std::uint8_t* rgb) {
  for (int x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const int k = cmyk[3];
    for (int c = 0; c < 3; ++c) rgb[c] = static_cast<std::uint8_t>(k - muldiv255(255 - cmyk[c], k));
  }
}

// Only 1/8, 2/8 and 4/8 (else 8/8): libjpeg-turbo has SIMD inverse DCTs for those (and their
// chroma sizes under 4:2:0, twice the luma's), while 3/8, 5/8, 6/8 and 7/8 run generic C code
// for luma and 6x6..14x14 for chroma. Decoding more pixels with the fast transforms is faster
// per thread on ImageNet-sized images than the fewest pixels with the slow ones (measured by
// bench suite `loaders`: the imagefolder loader with one worker).
int choose_scale(const CropBox& box, int min_w, int min_h) {
  for (int num = 1; num < 8; num *= 2) {
    // libjpeg rounds scaled dimensions up; the crop is measured the same way.
    const double w = box.w * num / 8.0, h = box.h * num / 8.0;
    if (w >= min_w && h >= min_h) return num;
  }
  return 8;
}

// The decoding work, between setjmp and the end; no objects with destructors live in the
// frame that calls setjmp.
void decode_into(jpeg_decompress_struct& cinfo, const CropBox& box, int min_w, int min_h,
                 bool allow_scaling, bool fancy_upsampling, DecodedRegion& out) {
  jpeg_read_header(&cinfo, TRUE);
  // libjpeg-turbo converts grey to RGB itself, but CMYK and YCCK only to CMYK.
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  const int full_w = static_cast<int>(cinfo.image_width);
  const int full_h = static_cast<int>(cinfo.image_height);
  CropBox b = box;
  if (b.w <= 0 || b.h <= 0) b = {0, 0, full_w, full_h};
  b.x = std::clamp(b.x, 0, full_w - 1);
  b.y = std::clamp(b.y, 0, full_h - 1);
  b.w = std::clamp(b.w, 1, full_w - b.x);
  b.h = std::clamp(b.h, 1, full_h - b.y);
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  cinfo.scale_num = allow_scaling ? static_cast<unsigned>(choose_scale(b, min_w, min_h)) : 8;
  cinfo.scale_denom = 8;
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = fancy_upsampling ? TRUE : FALSE;
  jpeg_start_decompress(&cinfo);
  const int ow = static_cast<int>(cinfo.output_width);
  const int oh = static_cast<int>(cinfo.output_height);
  const double fx = static_cast<double>(ow) / full_w, fy = static_cast<double>(oh) / full_h;
  const BoxF scaled{b.x * fx, b.y * fy, b.w * fx, b.h * fy};
  // One pixel of margin on each side for the bilinear filter.
  const int x0 = std::max(0, static_cast<int>(std::floor(scaled.x)) - 1);
  const int x1 = std::min(ow, static_cast<int>(std::ceil(scaled.x + scaled.w)) + 1);
  const int y0 = std::max(0, static_cast<int>(std::floor(scaled.y)) - 1);
  const int y1 = std::min(oh, static_cast<int>(std::ceil(scaled.y + scaled.h)) + 1);
  JDIMENSION xoff = static_cast<JDIMENSION>(x0), width = static_cast<JDIMENSION>(x1 - x0);
  if (width < static_cast<JDIMENSION>(ow)) jpeg_crop_scanline(&cinfo, &xoff, &width);
  if (y0 > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(y0));
  out.scale_num = static_cast<int>(cinfo.scale_num);
  out.image.width = static_cast<int>(cinfo.output_width);  // the cropped width
  out.image.height = y1 - y0;
  out.image.pixels.resize(static_cast<std::size_t>(out.image.width) * out.image.height * 3);
  const std::size_t stride = static_cast<std::size_t>(out.image.width) * 3;
  // From libjpeg's pool, freed with the decompressor: a vector here would be skipped by longjmp.
  JSAMPARRAY cmyk_row = cmyk ? (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo),
                                                          JPOOL_IMAGE, cinfo.output_width * 4, 1)
                             : nullptr;
  while (static_cast<int>(cinfo.output_scanline) < y1) {
    JSAMPROW row =
        out.image.pixels.data() + (static_cast<std::size_t>(cinfo.output_scanline) - y0) * stride;
    if (cmyk) {
      jpeg_read_scanlines(&cinfo, cmyk_row, 1);
      cmyk_to_rgb(cmyk_row[0], out.image.width, row);
    } else {
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
  }
  out.crop = {scaled.x - static_cast<double>(xoff), scaled.y - y0, scaled.w, scaled.h};
  jpeg_abort_decompress(&cinfo);
}

}  // namespace

std::vector<std::uint8_t> encode_jpeg(const RgbImage& image, int quality) {
  jpeg_compress_struct cinfo;
  ErrorManager err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
    fail("JPEG encode", err);
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const std::size_t stride = static_cast<std::size_t>(image.width) * 3;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(image.pixels.data() + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<std::uint8_t> out(buffer, buffer + size);
  std::free(buffer);
  return out;
}

JpegSize read_jpeg_size(const std::uint8_t* data, std::size_t size) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  set_up_errors(cinfo, err);
  if (size == 0) throw DatasetError(kReasonEmpty, "empty file");
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    fail("not a readable JPEG", err);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  JpegSize s{static_cast<int>(cinfo.image_width), static_cast<int>(cinfo.image_height)};
  jpeg_destroy_decompress(&cinfo);
  return s;
}

DecodedRegion decode_jpeg_region(const std::uint8_t* data, std::size_t size, const CropBox& box,
                                 int min_width, int min_height, bool allow_scaling,
                                 bool fancy_upsampling) {
  DecodedRegion out;
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  set_up_errors(cinfo, err);
  if (size == 0) throw DatasetError(kReasonEmpty, "empty file");
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    fail("corrupt JPEG", err);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  decode_into(cinfo, box, min_width, min_height, allow_scaling, fancy_upsampling, out);
  jpeg_destroy_decompress(&cinfo);
  return out;
}

RgbImage decode_jpeg(const std::uint8_t* data, std::size_t size, bool fancy_upsampling) {
  return decode_jpeg_region(data, size, CropBox{}, 0, 0, false, fancy_upsampling).image;
}

}  // namespace orch::imagedata
