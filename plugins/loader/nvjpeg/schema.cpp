// The nvjpeg loader's schema: every parameter in one declaration, its default said only here.
// Each parameter added after the first nvjpeg results were stored is left out of the
// configuration hash at its default (hash_exempt_since), so those results keep their hashes.
#include <orch/loaderkit/loader_params.h>

#include "plugin_schemas.h"

namespace orch::plugin_schemas {
namespace {

std::vector<ParamSpec> nvjpeg_params() {
  std::vector<ParamSpec> out = {
      param("root").string().doc(
          "the dataset folder: DIR/train/<class>/*.JPEG (or DIR/<class>/*.JPEG); what nvJPEG "
          "cannot decode (PNG, CMYK JPEGs) is decoded on the CPU and counted (data.cpu_fallback)"),
      loaderkit::split_param(),
      param("backend")
          .string()
          .one_of({"auto", "hardware", "gpu"})
          .default_("auto")
          .doc("hardware JPEG engines, the CUDA decoder, or hardware when the GPU has it"),
      param("workers").integer().min(1).max(256).default_(4).doc(
          "threads reading files and JPEG headers (decoding is on the GPU)"),
      param("prefetch")
          .integer()
          .min(1)
          .max(16)
          .default_(3)
          .doc("decoded batches kept ready on the device ahead of the training loop"),
      param("allocator")
          .string()
          .one_of({"torch", "cuda"})
          .default_("torch")
          .hash_exempt_since("1.0.0")
          .doc("nvJPEG's buffers: PyTorch's caching allocator and a pinned pool, or nvJPEG's own "
               "cudaMalloc/cudaFree (which wait for the device)"),
      param("decoders")
          .integer()
          .min(1)
          .max(8)
          .default_(1)
          .hash_exempt_since("1.0.0")
          .doc("batches decoded at once, each by its own thread, nvJPEG state and stream"),
      param("output")
          .string()
          .one_of({"rgb", "yuv"})
          .default_("rgb")
          .hash_exempt_since("1.0.0")
          .doc("what nvJPEG writes: interleaved RGB (its colour-conversion kernels), or YUV "
               "planes converted to RGB inside the crop kernel"),
      // False: faster under training, eager and captured, with the default and with 32 driver
      // connections (bench suite `loaders`); results stored while the default was true ran
      // pipelined under the same hash.
      param("hw_pipeline")
          .boolean()
          .default_(false)
          .hash_exempt_since("1.0.0")
          .doc("on the hardware engines: nvJPEG's pipelined batch decode (true), or without its "
               "pipelining (false: NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE); no effect on the CUDA "
               "decoder"),
      // True: faster under a graph-captured step, plain and fused ResNet50 alike, and within
      // noise eagerly (bench suite `loaders`); results stored while the default was false ran
      // without it under the same hash.
      param("hw_preallocate")
          .boolean()
          .default_(true)
          .hash_exempt_since("1.0.0")
          .doc("on the hardware engines: size nvJPEG's buffers for a whole batch up front "
               "(nvjpegDecodeBatchedPreAllocate) instead of as images come; no effect on the "
               "CUDA decoder"),
      param("cpu_share")
          .number()
          .min(0)
          .max(1)
          .default_(0)
          .hash_exempt_since("1.0.0")
          .doc("share of each batch the reading threads decode on the CPU (libjpeg-turbo, as "
               "imagefolder) beside nvJPEG, copied into the batch after its rows; 0: all by "
               "nvJPEG")};
  for (auto& spec : loaderkit::epoch_params()) out.push_back(std::move(spec));
  out.push_back(loaderkit::on_error_param());
  return out;
}

}  // namespace

PluginInfo nvjpeg() {
  PluginInfo info{"nvjpeg", PluginKind::kDataLoader, "1.0.0",
                  "JPEG folder (ImageNet layout) decoded on the GPU with nvJPEG (hardware JPEG "
                  "engines where present), random-resized-crop + flip + normalize by a CUDA kernel",
                  nvjpeg_params()};
  info.needs_cuda = CudaNeed{"it decodes on the GPU", "data.plugin: imagefolder"};
  return info;
}

}  // namespace orch::plugin_schemas
