// The GPU half of the nvjpeg loader's augmentation: one kernel that turns a batch of decoded
// images (interleaved RGB, each at its own offset in one device buffer) into the network's
// input, random-resized-crop + horizontal flip + ImageNet normalisation, in a single pass that
// reads only the pixels each output needs. Torch-free (CUDA runtime only), so the GPU tests can
// call it directly.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orch::nvjpeg {

/// One image of the batch: where its decoded pixels are and which box of it to sample.
struct CropJob {
  std::int64_t offset = 0;  ///< byte offset of the image's first pixel in the pixel buffer
  std::int32_t width = 0, height = 0;  ///< decoded size; rows are width * 3 bytes apart
  float box_x = 0, box_y = 0, box_w = 0, box_h = 0;  ///< crop box in source pixels
  std::int32_t flip = 0;                             ///< mirrored left-right
};

/// Bilinear resampling of each job's box to out_size x out_size with the CPU loaders' exact
/// arithmetic (pixel centres aligned, edge pixels clamped, weights in 1/256ths, rounded to
/// uint8), then (x / 255 - mean) / std into float `out`: N x 3 x S x S, laid out NCHW or, when
/// `channels_last`, NHWC. `jobs` is in device memory. Returns the launch's error, if any.
cudaError_t crop_resize_normalize(const CropJob* jobs, int n, const std::uint8_t* pixels,
                                  int out_size, bool channels_last, float* out,
                                  cudaStream_t stream);

}  // namespace orch::nvjpeg
