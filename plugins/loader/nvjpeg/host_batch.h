// A batch's files read and parsed on the host by the reading threads, waiting for the GPU; the
// rows nvJPEG is not to decode are decoded here on the CPU.
#pragma once

#include <orch/imagedata/augment.h>
#include <orch/imagedata/image_folder.h>
#include <orch/imagedata/sample_random.h>
#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nvjpeg_decoder.h"
#include "options.h"

namespace orch::nvjpeg_loader {

// One batch's files, read and parsed on the host, waiting for the GPU. Rows below gpu_count
// go to nvJPEG (bytes, infos, augment); the rest were decoded on the CPU into cpu_images.
struct HostBatch {
  std::vector<std::int64_t> samples;  // after on_error: skip substitutions
  std::vector<std::vector<std::uint8_t>> bytes;
  std::vector<nvjpeg::ImageInfo> infos;
  std::vector<imagedata::AugmentChoice> augment;
  std::vector<std::int64_t> labels;
  std::size_t gpu_count = 0;
  torch::Tensor cpu_images;  // pinned float, rows gpu_count.. of the batch, the batch's layout
  double cpu_decode_ms = 0;  // summed over the threads
  std::int64_t skipped = 0;
  std::uint64_t bytes_read = 0;
  // GPU rows nvJPEG cannot take, decoded on the CPU: a pinned {1, 3, S, S} float image each
  // (undefined for the others), and why (png, cmyk, refused).
  std::vector<torch::Tensor> fallback;
  std::map<std::string, std::int64_t> fallback_kinds, skipped_by_reason;
  std::uint64_t epoch = 0;  // of the batch: a sample's crop comes from (seed, epoch, index)
};

/// Reads and parses the files of `samples` (a batch of `epoch`) with `o.workers` threads, and
/// decodes its CPU rows (see cpu_share). With on_error: skip, a file that cannot be read, parsed
/// or (on the CPU) decoded gives its place to the next readable one of the dataset. `decoder`
/// only parses headers here.
HostBatch read_host_batch(const imagedata::FolderIndex& index, const Options& o,
                          const nvjpeg::Decoder& decoder, std::uint64_t epoch,
                          std::vector<std::int64_t> samples);

/// One image decoded on the CPU as the imagefolder loader decodes it (the same crop from the
/// same generator), normalised into a pinned {1, 3, S, S} float tensor in the batch's layout.
torch::Tensor decode_on_host(const std::vector<std::uint8_t>& bytes, imagedata::SampleRng rng,
                             const Options& o);

}  // namespace orch::nvjpeg_loader
