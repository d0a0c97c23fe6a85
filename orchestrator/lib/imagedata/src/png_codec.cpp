#include "orch/imagedata/png_codec.h"

#include <png.h>

#include <csetjmp>
#include <cstring>
#include <string>
#include <vector>

#include "orch/imagedata/dataset_error.h"

namespace orch::imagedata {
namespace {

// The bytes libpng reads from, and the first error it reported.
struct Reader {
  const std::uint8_t* data;
  std::size_t size, at;
  bool ran_out = false;
  std::string message;
  // Here rather than in read_into's frame, which libpng may longjmp out of: objects with
  // destructors must not live between setjmp and longjmp.
  std::vector<png_bytep> rows;
};

void read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (r->size - r->at < n) {
    r->ran_out = true;
    png_error(png, "the data ends early");
  }
  std::memcpy(out, r->data + r->at, n);
  r->at += n;
}

// libpng's error callback must not return: like libjpeg's, it longjmps to png_jmpbuf.
void on_error(png_structp png, png_const_charp message) {
  auto* r = static_cast<Reader*>(png_get_error_ptr(png));
  if (r->message.empty()) r->message = message;
  png_longjmp(png, 1);
}
// Warnings (a bad ancillary chunk, say) leave the pixels intact: PIL decodes such files too.
void on_warning(png_structp, png_const_charp) {}

const std::uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

[[noreturn]] void fail(const Reader& r) {
  if (r.ran_out) throw DatasetError(kReasonTruncated, "truncated PNG: the data ends early");
  throw DatasetError(
      kReasonCorrupt,
      "corrupt PNG: " + (r.message.empty() ? std::string("unknown libpng error") : r.message));
}

// The work between setjmp and the end; nothing with a destructor lives in setjmp's frame.
// `out` null: the header only.
void read_into(png_structp png, png_infop info, Reader& r, RgbImage* out, JpegSize& size) {
  png_read_info(png, info);
  size.width = static_cast<int>(png_get_image_width(png, info));
  size.height = static_cast<int>(png_get_image_height(png, info));
  if (!out) return;
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  // PIL's convert("RGB"): the high byte of 16-bit samples, palettes and low-depth grey expanded,
  // grey replicated, alpha dropped (not composited: transparency is ignored, not expanded).
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_set_interlace_handling(png);  // Adam7: libpng de-interlaces over its passes
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<png_size_t>(size.width) * 3)
    png_error(png, "unexpected row size after conversion to RGB");
  out->width = size.width;
  out->height = size.height;
  out->pixels.resize(static_cast<std::size_t>(size.width) * size.height * 3);
  r.rows.resize(static_cast<std::size_t>(size.height));
  for (int y = 0; y < size.height; ++y)
    r.rows[static_cast<std::size_t>(y)] =
        out->pixels.data() + static_cast<std::size_t>(y) * size.width * 3;
  png_read_image(png, r.rows.data());
  // The trailing chunks are not read: the pixels are complete, and PIL does not check them.
}

JpegSize run(const std::uint8_t* data, std::size_t size, RgbImage* out) {
  if (size == 0) throw DatasetError(kReasonEmpty, "empty file");
  if (size < 8 || std::memcmp(data, kSignature, 8) != 0)
    throw DatasetError(kReasonNotAnImage, "not PNG data (no PNG signature)");
  Reader r{data, size, 0, false, {}, {}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, on_error, on_warning);
  if (!png) throw DatasetError(kReasonOther, "libpng: out of memory");
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw DatasetError(kReasonOther, "libpng: out of memory");
  }
  // Decompression bombs: ImageNet's largest image is far under this; refusing beats allocating
  // gigabytes for a forged header.
  png_set_user_limits(png, 1u << 15, 1u << 15);
  png_set_read_fn(png, &r, read_bytes);
  JpegSize s;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    fail(r);
  }
  read_into(png, info, r, out, s);
  png_destroy_read_struct(&png, &info, nullptr);
  return s;
}

}  // namespace

JpegSize read_png_size(const std::uint8_t* data, std::size_t size) {
  return run(data, size, nullptr);
}

RgbImage decode_png(const std::uint8_t* data, std::size_t size) {
  RgbImage out;
  run(data, size, &out);
  return out;
}

}  // namespace orch::imagedata
