// The GPU half of the nvjpeg loader's augmentation: one kernel that turns a batch of decoded
// images (each at its own offset in one device buffer: interleaved RGB, or nvJPEG's Y, Cb and
// Cr planes converted to RGB here, as libjpeg does, for the pixels sampled) into the network's
// input, random-resized-crop + horizontal flip + ImageNet normalisation, in a single pass that
// reads only the pixels each output needs. Torch-free (CUDA runtime only), so the GPU tests can
// call it directly.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ycc_rgb.h"

namespace orch::nvjpeg {

/// How a job's decoded pixels are stored.
enum CropFormat : std::int32_t {
  kCropRgbi = 0,  ///< interleaved RGB, rows width * 3 bytes apart
  kCropYcc = 1,   ///< Y, Cb, Cr planes as described by CropJob::planes
};

/// One image of the batch: where its decoded pixels are and which box of it to sample.
struct CropJob {
  std::int64_t offset = 0;  ///< byte offset of the image's first byte in the pixel buffer
  std::int32_t width = 0, height = 0;                ///< decoded (luma) size
  float box_x = 0, box_y = 0, box_w = 0, box_h = 0;  ///< crop box in source pixels
  std::int32_t flip = 0;                             ///< mirrored left-right
  std::int32_t format = kCropRgbi;                   ///< a CropFormat
  YccLayout planes;  ///< kCropYcc: the planes, offsets from `offset`
};

/// Bilinear resampling of each job's box to out_size x out_size with the CPU loaders' exact
/// arithmetic (pixel centres aligned, edge pixels clamped, weights in 1/256ths, rounded to
/// uint8), then (x / 255 - mean) / std into float `out`: N x 3 x S x S, laid out NCHW or, when
/// `channels_last`, NHWC. A kCropYcc job's four corner pixels are converted to RGB first
/// (ycc_pixel_rgb: libjpeg's arithmetic, plain chroma upsampling), then interpolated the same
/// way, so exact planes give the kCropRgbi result byte for byte. `jobs` is in device memory.
/// Returns the launch's error, if any.
cudaError_t crop_resize_normalize(const CropJob* jobs, int n, const std::uint8_t* pixels,
                                  int out_size, bool channels_last, float* out,
                                  cudaStream_t stream);

/// cudaFuncGetAttributes of the kernel on the current device: fails with
/// cudaErrorNoKernelImageForDevice where the build has no image or PTX for it (for
/// orch::KernelImageCache, <orch/kernel_image.h>).
cudaError_t crop_resize_attributes(cudaFuncAttributes* attributes);

}  // namespace orch::nvjpeg
