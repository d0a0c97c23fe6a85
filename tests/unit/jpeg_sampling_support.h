// JPEGs with a chosen chroma subsampling (4:4:4, 4:2:2, 4:2:0, 4:4:0, 4:1:1) or grayscale, at
// any size, for the tests of the nvjpeg loader's YUV path (the dataset's encode_jpeg writes
// 4:2:0 only). Header-only: the CPU unit tests and the GPU tests both use it.
#pragma once

#include <orch/imagedata/jpeg_codec.h>

#include <algorithm>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

// jpeglib.h uses size_t and FILE without declaring them: it must follow <cstdio>.
// clang-format off
#include <jpeglib.h>
// clang-format on

namespace orch::test {

/// A JPEG's sampling: the luma component's factors over chroma's 1 x 1, or grayscale.
struct Sampling {
  const char* name;
  int h = 1, v = 1;
  bool gray = false;
};
inline const Sampling kS444{"4:4:4", 1, 1}, kS422{"4:2:2", 2, 1}, kS420{"4:2:0", 2, 2},
    kS440{"4:4:0", 1, 2}, kS411{"4:1:1", 4, 1}, kGray{"gray", 1, 1, true};

/// The top-left w x h of `img` (at most its size).
inline imagedata::RgbImage crop_rgb(const imagedata::RgbImage& img, int w, int h) {
  imagedata::RgbImage out;
  out.width = std::min(w, img.width);
  out.height = std::min(h, img.height);
  out.pixels.resize(static_cast<std::size_t>(out.width) * out.height * 3);
  for (int y = 0; y < out.height; ++y)
    std::copy_n(img.pixels.begin() + static_cast<std::ptrdiff_t>(y) * img.width * 3, out.width * 3,
                out.pixels.begin() + static_cast<std::ptrdiff_t>(y) * out.width * 3);
  return out;
}

/// libjpeg's error manager for test code: error_exit jumps back to `jump` (set with setjmp
/// in a frame that holds no object with a destructor), where the caller destroys the struct.
struct JpegErrors {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
};
inline void jpeg_error_jump(j_common_ptr cinfo) {
  std::longjmp(reinterpret_cast<JpegErrors*>(cinfo->err)->jump, 1);
}

namespace jpeg_detail {

// The libjpeg calls, between setjmp and the end: nothing with a destructor lives here.
inline bool encode(const imagedata::RgbImage& img, int quality, const Sampling& s,
                   unsigned char** buffer, unsigned long* size) {
  jpeg_compress_struct cinfo;
  JpegErrors err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = jpeg_error_jump;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, buffer, size);
  cinfo.image_width = static_cast<JDIMENSION>(img.width);
  cinfo.image_height = static_cast<JDIMENSION>(img.height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  if (s.gray) {
    jpeg_set_colorspace(&cinfo, JCS_GRAYSCALE);  // libjpeg converts RGB to luma
  } else {
    cinfo.comp_info[0].h_samp_factor = s.h;
    cinfo.comp_info[0].v_samp_factor = s.v;
    for (int c = 1; c < 3; ++c)
      cinfo.comp_info[c].h_samp_factor = cinfo.comp_info[c].v_samp_factor = 1;
  }
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const std::size_t stride = static_cast<std::size_t>(img.width) * 3;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(img.pixels.data() + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}
}  // namespace jpeg_detail

/// `img` as a baseline JPEG at `quality` with sampling `s`.
inline std::vector<std::uint8_t> encode_sampled(const imagedata::RgbImage& img, int quality,
                                                const Sampling& s) {
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const bool ok = jpeg_detail::encode(img, quality, s, &buffer, &size);
  std::vector<std::uint8_t> out;
  if (ok) out.assign(buffer, buffer + size);
  std::free(buffer);
  if (!ok) throw std::runtime_error(std::string("encoding a ") + s.name + " test JPEG failed");
  return out;
}

}  // namespace orch::test
