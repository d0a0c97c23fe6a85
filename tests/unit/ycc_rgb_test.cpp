// The nvjpeg loader's YCbCr -> RGB conversion (plugins/loader/nvjpeg/ycc_rgb.h, what its crop
// kernel runs for `output: yuv`) on the CPU against libjpeg-turbo itself: applied to the
// YCbCr pixels libjpeg-turbo decodes (plain chroma upsampling), and to the raw Y, Cb, Cr
// planes laid out as nvJPEG is given them, it must give libjpeg-turbo's own RGB decode with
// plain upsampling byte for byte, for every subsampling and odd sizes.
#include <orch/imagedata/image_generator.h>
#include <orch/imagedata/jpeg_codec.h>

#include <catch2/catch.hpp>
#include <csetjmp>
#include <cstdio>

// jpeglib.h uses size_t and FILE without declaring them: it must follow <cstdio>.
// clang-format off
#include <jpeglib.h>
// clang-format on

#include "unit/jpeg_sampling_support.h"
#include "ycc_rgb.h"

using namespace orch;
using nvjpeg::YccLayout;

namespace {

// What libjpeg-turbo decodes: `channels` bytes per pixel, or raw component planes.
struct Decoded {
  int width = 0, height = 0, channels = 0;
  std::vector<std::uint8_t> pixels;
  int components = 0;
  int plane_width[3] = {}, plane_height[3] = {}, plane_pitch[3] = {};
  std::vector<std::uint8_t> planes[3];  // raw: component c, rows plane_pitch[c] apart
  std::vector<JSAMPROW> rows[3];        // raw: pointers to those rows, for libjpeg
};

// The libjpeg calls; `out` is filled in place (no object with a destructor is created in this
// frame after setjmp).
bool decode_into(const std::vector<std::uint8_t>& file, bool raw, Decoded& out) {
  jpeg_decompress_struct cinfo;
  test::JpegErrors err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = test::jpeg_error_jump;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, file.data(), static_cast<unsigned long>(file.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.dct_method = JDCT_ISLOW;  // as imagedata::decode_jpeg
  cinfo.do_fancy_upsampling = FALSE;
  cinfo.raw_data_out = raw ? TRUE : FALSE;
  cinfo.out_color_space = cinfo.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_YCbCr;
  jpeg_start_decompress(&cinfo);
  out.width = static_cast<int>(cinfo.output_width);
  out.height = static_cast<int>(cinfo.output_height);
  out.components = cinfo.num_components;
  if (!raw) {
    out.channels = cinfo.output_components;
    out.pixels.resize(static_cast<std::size_t>(out.width) * out.height * out.channels);
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW row = out.pixels.data() +
                     static_cast<std::size_t>(cinfo.output_scanline) * out.width * out.channels;
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
  } else {
    // jpeg_read_raw_data returns max_v_samp_factor * DCTSIZE luma rows a call; component c's
    // rows are padded to whole blocks.
    const int max_v = cinfo.max_v_samp_factor;
    for (int c = 0; c < out.components; ++c) {
      const jpeg_component_info& comp = cinfo.comp_info[c];
      out.plane_width[c] = static_cast<int>(comp.downsampled_width);
      out.plane_height[c] = static_cast<int>(comp.downsampled_height);
      out.plane_pitch[c] = static_cast<int>(comp.width_in_blocks) * DCTSIZE;
      const std::size_t total_rows =
          static_cast<std::size_t>(cinfo.total_iMCU_rows) * comp.v_samp_factor * DCTSIZE;
      out.planes[c].resize(total_rows * out.plane_pitch[c]);
      out.rows[c].resize(total_rows);
      for (std::size_t r = 0; r < total_rows; ++r)
        out.rows[c][r] = out.planes[c].data() + r * out.plane_pitch[c];
    }
    for (JDIMENSION imcu = 0; cinfo.output_scanline < cinfo.output_height; ++imcu) {
      JSAMPARRAY per_component[3];
      for (int c = 0; c < out.components; ++c)
        per_component[c] = out.rows[c].data() + imcu * cinfo.comp_info[c].v_samp_factor * DCTSIZE;
      jpeg_read_raw_data(&cinfo, per_component, static_cast<JDIMENSION>(max_v * DCTSIZE));
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

Decoded decode(const std::vector<std::uint8_t>& file, bool raw) {
  Decoded out;
  REQUIRE(decode_into(file, raw, out));
  return out;
}

// The raw planes copied into one buffer where ycc_layout() puts them for nvJPEG.
std::vector<std::uint8_t> as_nvjpeg_buffer(const Decoded& raw, YccLayout& layout) {
  int widths[4] = {raw.plane_width[0], raw.plane_width[1], raw.plane_width[2], 0};
  int heights[4] = {raw.plane_height[0], raw.plane_height[1], raw.plane_height[2], 0};
  const std::int64_t bytes = nvjpeg::ycc_layout(raw.components, widths, heights, layout);
  REQUIRE(bytes > 0);
  std::vector<std::uint8_t> buffer(static_cast<std::size_t>(bytes), 0);
  for (int c = 0; c < raw.components; ++c)
    for (int y = 0; y < raw.plane_height[c]; ++y)
      std::copy_n(
          raw.planes[c].begin() + static_cast<std::ptrdiff_t>(y) * raw.plane_pitch[c],
          raw.plane_width[c],
          buffer.begin() + layout.offset[c] + static_cast<std::ptrdiff_t>(y) * layout.pitch[c]);
  return buffer;
}

// A hue sweep at full saturation with a brightness ramp: chroma far from 128, so the
// conversion's clamps to 0 and 255 are exercised (photo-like content rarely reaches them).
imagedata::RgbImage saturated(int w, int h) {
  imagedata::RgbImage img{w, h, std::vector<std::uint8_t>(static_cast<std::size_t>(w) * h * 3)};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int hue = (x * 6 * 256) / w, seg = hue / 256, f = hue % 256;
      const int v = 64 + (191 * y) / std::max(h - 1, 1);
      const int up = v * f / 255, down = v * (255 - f) / 255;
      const int rgb[6][3] = {{v, up, 0},   {down, v, 0}, {0, v, up},
                             {0, down, v}, {up, 0, v},   {v, 0, down}};
      for (int c = 0; c < 3; ++c)
        img.pixels[(static_cast<std::size_t>(y) * w + x) * 3 + c] =
            static_cast<std::uint8_t>(rgb[seg % 6][c]);
    }
  return img;
}

}  // namespace

TEST_CASE("ycc_rgb: libjpeg's constants, neutral grey and the clamps", "[nvjpeg][ycc]") {
  std::uint8_t rgb[3];
  nvjpeg::ycc_to_rgb(128, 128, 128, rgb);
  CHECK((rgb[0] == 128 && rgb[1] == 128 && rgb[2] == 128));
  nvjpeg::ycc_to_rgb(0, 128, 128, rgb);
  CHECK((rgb[0] == 0 && rgb[1] == 0 && rgb[2] == 0));
  // Cr 255: R = 255 + round(1.402 * 127) clamps to 255; Y 0, Cr 0: R = -178 clamps to 0.
  nvjpeg::ycc_to_rgb(255, 128, 255, rgb);
  CHECK(rgb[0] == 255);
  nvjpeg::ycc_to_rgb(0, 128, 0, rgb);
  CHECK(rgb[0] == 0);
  // jdcolor.c by hand: Y 100, Cb 200 (x 72), Cr 50 (x -78):
  // R = 100 + ((91881 * -78 + 32768) >> 16) = 100 - 109 = -9 -> 0
  // G = 100 + ((-22554 * 72 + 32768 - 46802 * -78) >> 16) = 100 + 31 = 131
  // B = 100 + ((116130 * 72 + 32768) >> 16) = 100 + 128 = 228
  nvjpeg::ycc_to_rgb(100, 200, 50, rgb);
  CHECK(int(rgb[0]) == 0);
  CHECK(int(rgb[1]) == 131);
  CHECK(int(rgb[2]) == 228);
}

TEST_CASE("ycc_rgb: chroma factors and plane layouts from component sizes", "[nvjpeg][ycc]") {
  CHECK(nvjpeg::chroma_factor(101, 101) == 1);
  CHECK(nvjpeg::chroma_factor(101, 51) == 2);  // odd width, 4:2:0 or 4:2:2: rounded up
  CHECK(nvjpeg::chroma_factor(100, 50) == 2);
  CHECK(nvjpeg::chroma_factor(101, 26) == 4);  // 4:1:1
  CHECK(nvjpeg::chroma_factor(5, 2) == 4);     // ceil(5 / 4); 5 / 2 would round to 3
  CHECK(nvjpeg::chroma_factor(1, 1) == 1);
  CHECK(nvjpeg::chroma_factor(101, 34) == 0);  // 3: not a factor the kernel takes
  CHECK(nvjpeg::chroma_factor(50, 100) == 0);  // chroma larger than luma

  YccLayout l;
  const int w420[4] = {101, 51, 51, 0}, h420[4] = {75, 38, 38, 0};
  // Y 101 * 75 = 7575 bytes, Cb and Cr 51 * 38 = 1938, each plane at a multiple of 256.
  CHECK(nvjpeg::ycc_layout(3, w420, h420, l) == 9728 + 1938);
  CHECK((l.h_factor == 2 && l.v_factor == 2 && l.components == 3));
  CHECK((l.offset[0] == 0 && l.offset[1] == 7680 && l.offset[2] == 9728));
  CHECK((l.pitch[0] == 101 && l.pitch[1] == 51 && l.pitch[2] == 51));
  // Grayscale: Y, and luma-sized room for whatever nvJPEG writes to channels 1 and 2.
  const int wg[4] = {33, 0, 0, 0}, hg[4] = {17, 0, 0, 0};
  CHECK(nvjpeg::ycc_layout(1, wg, hg, l) == 2 * 768 + 33 * 17);
  CHECK((l.components == 1 && l.pitch[1] == 33 && l.offset[2] == 2 * 768));
  // What the kernel cannot convert from planes: decoded to interleaved RGB instead.
  const int w4[4] = {64, 64, 64, 64}, h4[4] = {64, 64, 64, 64};
  CHECK(nvjpeg::ycc_layout(4, w4, h4, l) == -1);  // CMYK / YCCK
  const int wmix[4] = {64, 32, 64, 0}, hmix[4] = {64, 32, 64, 0};
  CHECK(nvjpeg::ycc_layout(3, wmix, hmix, l) == -1);  // Cb and Cr sampled differently
}

TEST_CASE("ycc_rgb: libjpeg-turbo's YCbCr and raw planes convert to its RGB, byte for byte",
          "[nvjpeg][ycc]") {
  const imagedata::RgbImage photo = imagedata::render_image(3, 1, 4);
  const std::vector<std::pair<int, int>> sizes = {
      {photo.width, photo.height}, {101, 75}, {37, 29}, {7, 5}, {1, 1}};
  int images = 0;
  for (const test::Sampling& s :
       {test::kS444, test::kS422, test::kS420, test::kS440, test::kS411, test::kGray}) {
    for (const auto& [w, h] : sizes) {
      for (bool sat : {false, true}) {
        const imagedata::RgbImage src = sat ? saturated(w, h) : test::crop_rgb(photo, w, h);
        const auto file = test::encode_sampled(src, 90, s);
        INFO(s.name << " " << w << "x" << h << (sat ? " saturated" : " photo"));
        const imagedata::RgbImage rgb =
            imagedata::decode_jpeg(file.data(), file.size(), /*fancy=*/false);
        const Decoded ycc = decode(file, /*raw=*/false);
        const Decoded raw = decode(file, /*raw=*/true);
        REQUIRE(rgb.width == w);
        REQUIRE(rgb.height == h);
        REQUIRE(ycc.channels == (s.gray ? 1 : 3));
        REQUIRE(raw.components == (s.gray ? 1 : 3));
        if (!s.gray) {
          // The component sizes the header gives (what nvjpegGetImageInfo reports): chroma
          // rounded up for odd sizes.
          CHECK(raw.plane_width[1] == (w + s.h - 1) / s.h);
          CHECK(raw.plane_height[1] == (h + s.v - 1) / s.v);
        }
        YccLayout layout;
        const std::vector<std::uint8_t> planes = as_nvjpeg_buffer(raw, layout);
        // The factors found from the sizes (where more than one fits, luma <= 2, any maps
        // every pixel to chroma sample 0).
        if (w > 2) CHECK(layout.h_factor == s.h);
        if (h > 2) CHECK(layout.v_factor == s.v);
        std::int64_t from_pixels = 0, from_planes = 0;
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x) {
            const std::size_t i = static_cast<std::size_t>(y) * w + x;
            std::uint8_t a[3], b[3];
            if (s.gray) {
              a[0] = a[1] = a[2] = ycc.pixels[i];
            } else {
              nvjpeg::ycc_to_rgb(ycc.pixels[i * 3], ycc.pixels[i * 3 + 1], ycc.pixels[i * 3 + 2],
                                 a);
            }
            nvjpeg::ycc_pixel_rgb(planes.data(), layout, x, y, b);
            for (int c = 0; c < 3; ++c) {
              from_pixels += a[c] != rgb.pixels[i * 3 + c];
              from_planes += b[c] != rgb.pixels[i * 3 + c];
            }
          }
        CHECK(from_pixels == 0);
        CHECK(from_planes == 0);
        ++images;
      }
    }
  }
  CHECK(images == 60);
}
