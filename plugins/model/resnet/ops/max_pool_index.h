// The index arithmetic of the max-pool kernels (max_pool_kernels.cu), on the host and the
// device alike, so the CPU tests check it against ATen's pooling (tests/integration/
// max_pool_test.cpp) and the GPU kernels run the very same code. 32-bit: a GPU divides 64-bit
// integers in a long software sequence, and each thread decomposes its index with three
// divisions; supported() keeps every count of threads below 2^32.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define ORCH_MAX_POOL_HD __host__ __device__ __forceinline__
#else
#define ORCH_MAX_POOL_HD inline
#endif

namespace orch::resnet::max_pool_kernels {

/// A pass's sizes, as the threads use them. `groups`: channels / values per 16-byte vector.
struct Dims {
  std::uint32_t n = 0, h = 0, w = 0, out_h = 0, out_w = 0, groups = 0;
  std::int32_t kernel = 3, stride = 2, padding = 1;
};

/// Where thread i works: image n, row and column (of the output in the forward, of the input in
/// the backward), channel group, and pixel = (n * rows + row) * cols + col.
struct Place {
  std::uint32_t n, row, col, group, pixel;
};

ORCH_MAX_POOL_HD Place place_of(std::uint32_t i, std::uint32_t groups, std::uint32_t rows,
                                std::uint32_t cols) {
  Place p;
  p.group = i % groups;
  p.pixel = i / groups;
  p.col = p.pixel % cols;
  const std::uint32_t image_row = p.pixel / cols;
  p.row = image_row % rows;
  p.n = image_row / rows;
  return p;
}

/// Output (oh, ow)'s window: its unclipped top-left corner (h0, w0) and the rows [hs, he) and
/// columns [ws, we) of it inside the image, scanned row-major like ATen's kernels.
struct Window {
  std::int32_t h0, w0, hs, he, ws, we;
};

ORCH_MAX_POOL_HD Window window_of(std::int32_t oh, std::int32_t ow, const Dims& d) {
  Window win;
  win.h0 = oh * d.stride - d.padding;
  win.w0 = ow * d.stride - d.padding;
  win.hs = win.h0 < 0 ? 0 : win.h0;
  win.ws = win.w0 < 0 ? 0 : win.w0;
  const std::int32_t he = win.h0 + d.kernel, we = win.w0 + d.kernel;
  win.he = he < static_cast<std::int32_t>(d.h) ? he : static_cast<std::int32_t>(d.h);
  win.we = we < static_cast<std::int32_t>(d.w) ? we : static_cast<std::int32_t>(d.w);
  return win;
}

/// Input (ih, iw)'s position in the window whose unclipped corner is (h0, w0): row-major, so at
/// most kernel^2 - 1 (a byte for windows up to 15 x 15).
ORCH_MAX_POOL_HD std::uint8_t position(std::int32_t ih, std::int32_t iw, std::int32_t h0,
                                       std::int32_t w0, std::int32_t kernel) {
  return static_cast<std::uint8_t>((ih - h0) * kernel + (iw - w0));
}

/// The outputs whose windows contain input (ih, iw): rows [ohs, ohe), columns [ows, owe)
/// (ATen's p_start / p_end).
struct Range {
  std::int32_t ohs, ohe, ows, owe;
};

ORCH_MAX_POOL_HD std::int32_t first_window(std::int32_t i, const Dims& d) {
  return i + d.padding < d.kernel ? 0 : (i + d.padding - d.kernel) / d.stride + 1;
}

ORCH_MAX_POOL_HD Range windows_containing(std::int32_t ih, std::int32_t iw, const Dims& d) {
  Range r;
  r.ohs = first_window(ih, d);
  r.ows = first_window(iw, d);
  const std::int32_t ohe = (ih + d.padding) / d.stride + 1, owe = (iw + d.padding) / d.stride + 1;
  r.ohe = ohe < static_cast<std::int32_t>(d.out_h) ? ohe : static_cast<std::int32_t>(d.out_h);
  r.owe = owe < static_cast<std::int32_t>(d.out_w) ? owe : static_cast<std::int32_t>(d.out_w);
  return r;
}

}  // namespace orch::resnet::max_pool_kernels
