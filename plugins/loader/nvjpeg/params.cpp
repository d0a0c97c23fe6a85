// The nvjpeg loader's parameters, one function each, beside the reasons for its default and for
// leaving it out of the configuration hash at that default.
#include "params.h"

#include <orch/loaderkit/loader_params.h>

#include <cstdint>
#include <string>

namespace orch::nvjpeg_loader {
namespace {

ParamSpec root_param() {
  return {"root",
          ParamType::kString,
          std::string(""),
          {},
          {},
          {},
          "the dataset folder: DIR/train/<class>/*.JPEG (or DIR/<class>/*.JPEG); what nvJPEG "
          "cannot decode (PNG, CMYK JPEGs) is decoded on the CPU and counted (data.cpu_fallback)"};
}

ParamSpec backend_param() {
  return {"backend",
          ParamType::kString,
          std::string("auto"),
          {std::string("auto"), std::string("hardware"), std::string("gpu")},
          {},
          {},
          "hardware JPEG engines, the CUDA decoder, or hardware when the GPU has it"};
}

ParamSpec workers_param() {
  return {"workers",
          ParamType::kInt,
          std::int64_t{4},
          {},
          1,
          256,
          "threads reading files and JPEG headers (decoding is on the GPU)"};
}

ParamSpec prefetch_param() {
  return {"prefetch",
          ParamType::kInt,
          std::int64_t{3},
          {},
          1,
          16,
          "decoded batches kept ready on the device ahead of the training loop"};
}

ParamSpec allocator_param() {
  return {"allocator",
          ParamType::kString,
          std::string("torch"),
          {std::string("torch"), std::string("cuda")},
          {},
          {},
          "nvJPEG's buffers: PyTorch's caching allocator and a pinned pool, or nvJPEG's own "
          "cudaMalloc/cudaFree (which wait for the device)",
          // Keeps the first nvjpeg results' hashes.
          /*hashed_at_default=*/false};
}

ParamSpec decoders_param() {
  return {"decoders",
          ParamType::kInt,
          std::int64_t{1},
          {},
          1,
          8,
          "batches decoded at once, each by its own thread, nvJPEG state and stream",
          // Keeps the first nvjpeg results' hashes.
          /*hashed_at_default=*/false};
}

ParamSpec output_param() {
  return {"output",
          ParamType::kString,
          std::string("rgb"),
          {std::string("rgb"), std::string("yuv")},
          {},
          {},
          "what nvJPEG writes: interleaved RGB (its colour-conversion kernels), or YUV planes "
          "converted to RGB inside the crop kernel",
          // Keeps the first nvjpeg results' hashes.
          /*hashed_at_default=*/false};
}

ParamSpec hw_pipeline_param() {
  return {"hw_pipeline",
          ParamType::kBool,
          false,
          {},
          {},
          {},
          "on the hardware engines: nvJPEG's pipelined batch decode (true), or without its "
          "pipelining (false: NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE); no effect on the CUDA decoder",
          // Left out of the hash at its default, like every parameter added after the first
          // nvjpeg results were stored, so those keep their configuration hashes. False is the
          // default because it is faster under training, eager and captured, with the default
          // and with 32 driver connections (measured by bench suite `loaders`); results stored
          // while the default was true ran pipelined under the same hash.
          /*hashed_at_default=*/false};
}

ParamSpec hw_preallocate_param() {
  return {"hw_preallocate",
          ParamType::kBool,
          true,
          {},
          {},
          {},
          "on the hardware engines: size nvJPEG's buffers for a whole batch up front "
          "(nvjpegDecodeBatchedPreAllocate) instead of as images come; no effect on the CUDA "
          "decoder",
          // Left out of the hash at its default (added after the first nvjpeg results). True
          // is the default because it is faster under a graph-captured step, plain and fused
          // ResNet50 alike, and within noise eagerly (measured by bench suite `loaders`);
          // results stored while the default was false ran without it under the same hash.
          /*hashed_at_default=*/false};
}

ParamSpec cpu_share_param() {
  return {"cpu_share",
          ParamType::kFloat,
          0.0,
          {},
          0.0,
          1.0,
          "share of each batch the reading threads decode on the CPU (libjpeg-turbo, as "
          "imagefolder) beside nvJPEG, copied into the batch after its rows; 0: all by nvJPEG",
          // Keeps the first nvjpeg results' hashes.
          /*hashed_at_default=*/false};
}

}  // namespace

std::vector<ParamSpec> nvjpeg_params() {
  std::vector<ParamSpec> out = {
      root_param(),        loaderkit::split_param(), backend_param(),  workers_param(),
      prefetch_param(),    allocator_param(),        decoders_param(), output_param(),
      hw_pipeline_param(), hw_preallocate_param(),   cpu_share_param()};
  for (auto& spec : loaderkit::epoch_params()) out.push_back(std::move(spec));
  out.push_back(loaderkit::on_error_param());
  return out;
}

}  // namespace orch::nvjpeg_loader
