// A HostBatch decoded on the device: nvJPEG's rows, the crop kernel over them, and the rows
// decoded on the CPU copied in after them.
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#include <orch/imagedata/image_folder.h>
#include <torch/torch.h>

#include <memory>

#include "host_batch.h"
#include "nvjpeg_decoder.h"
#include "options.h"

namespace orch::nvjpeg_loader {

// A batch on the device, ready once `ready` is reached on the producer's stream.
struct DeviceBatch {
  torch::Tensor images, labels;
  at::cuda::CUDAEvent ready;
};

// Where a batch's decode_ms went: inside nvJPEG's calls (its host-side parsing and
// launching, and whatever it waits for), and waiting for the producer's stream at the end
// (the GPU finishing the batch). The rest is ours: layout, allocations, the crop jobs.
struct DecodeTimes {
  double nvjpeg_ms = 0, gpu_wait_ms = 0;
};

/// Decodes and augments one batch on `stream`, the current stream of its device (its GPU rows;
/// its CPU rows, decoded already, are copied after them); returns when the GPU is done with it.
/// A GPU row nvJPEG fails to decode is decoded on the CPU into `h` or, with on_error: skip,
/// replaced by another of the batch and counted in `h`.
std::unique_ptr<DeviceBatch> decode_on_device(const imagedata::FolderIndex& index, const Options& o,
                                              nvjpeg::Decoder& decoder,
                                              const c10::cuda::CUDAStream& stream, HostBatch& h,
                                              DecodeTimes& times);

}  // namespace orch::nvjpeg_loader
