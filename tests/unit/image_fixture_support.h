// Tiny image files of every kind ImageNet holds, written by the tests themselves with
// libjpeg-turbo and libpng: CMYK and YCCK JPEGs (with or without Adobe's marker), grayscale,
// progressive, and PNGs (RGB, grey, palette, RGBA, 16-bit). Pixels are a smooth pattern, so JPEG
// keeps them close and a reference decoder's output can be compared within a small tolerance.
#pragma once

#include <png.h>

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

// clang-format off
#include <jpeglib.h>
// clang-format on

namespace orch::imagedata::test {

/// `channels` samples per pixel of a width x height smooth pattern, seeded by `seed`.
inline std::vector<std::uint8_t> pattern(int width, int height, int channels, int seed = 0) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(width) * height * channels);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c)
        px[(static_cast<std::size_t>(y) * width + x) * channels + c] = static_cast<std::uint8_t>(
            (x * (40 + 17 * c) / width + y * (90 - 13 * c) / height + 60 * c + seed * 31) % 256);
  return px;
}

struct JpegFixture {
  J_COLOR_SPACE in = JCS_RGB;  ///< JCS_RGB, JCS_GRAYSCALE, JCS_CMYK
  J_COLOR_SPACE out =
      JCS_RGB;  ///< the stored colour space: JCS_YCbCr, JCS_GRAYSCALE, JCS_CMYK, JCS_YCCK
  bool progressive = false;
  bool adobe_marker = true;  ///< libjpeg writes one for CMYK/YCCK unless told not to
  int quality = 95;
};

inline std::vector<std::uint8_t> write_jpeg(int width, int height,
                                            const std::vector<std::uint8_t>& pixels,
                                            const JpegFixture& f) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);  // errors exit: fine for a test's own well-formed input
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = f.in == JCS_GRAYSCALE ? 1 : f.in == JCS_CMYK ? 4 : 3;
  cinfo.in_color_space = f.in;
  jpeg_set_defaults(&cinfo);
  jpeg_set_colorspace(&cinfo, f.out);
  jpeg_set_quality(&cinfo, f.quality, TRUE);
  if (f.progressive) jpeg_simple_progression(&cinfo);
  if (!f.adobe_marker) cinfo.write_Adobe_marker = FALSE;
  jpeg_start_compress(&cinfo, TRUE);
  const std::size_t stride = static_cast<std::size_t>(width) * cinfo.input_components;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels.data() + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<std::uint8_t> out(buffer, buffer + size);
  std::free(buffer);
  return out;
}

/// A PNG of `color_type` (PNG_COLOR_TYPE_*) and `depth` bits; for a palette image the pixels are
/// indices into a 256-colour palette of the pattern's own making.
inline std::vector<std::uint8_t> write_png(int width, int height, int color_type, int depth,
                                           const std::vector<std::uint8_t>& samples,
                                           bool interlaced = false) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  std::vector<std::uint8_t> out;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("libpng could not write the fixture");
  }
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, png_size_t n) {
        auto* o = static_cast<std::vector<std::uint8_t>*>(png_get_io_ptr(p));
        o->insert(o->end(), data, data + n);
      },
      nullptr);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), depth,
               color_type, interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  std::vector<png_color> palette(256);
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    for (int i = 0; i < 256; ++i)
      palette[static_cast<std::size_t>(i)] = {static_cast<png_byte>(i),
                                              static_cast<png_byte>(255 - i),
                                              static_cast<png_byte>((i * 7) % 256)};
    png_set_PLTE(png, info, palette.data(), 256);
  }
  png_write_info(png, info);
  const int channels = png_get_channels(png, info);
  const std::size_t stride = static_cast<std::size_t>(width) * channels * (depth / 8);
  std::vector<png_bytep> rows(static_cast<std::size_t>(height));
  for (int y = 0; y < height; ++y)
    rows[static_cast<std::size_t>(y)] = const_cast<png_bytep>(samples.data() + y * stride);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

}  // namespace orch::imagedata::test
