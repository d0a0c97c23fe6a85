// nvJPEG batched decoding on the device, torch-free: into interleaved RGB (NVJPEG_OUTPUT_RGBI,
// nvJPEG's colour-conversion kernels run on its internal streams) or into the JPEG's Y, Cb and
// Cr planes (NVJPEG_OUTPUT_YUV, no conversion by nvJPEG; the crop kernel converts). The
// hardware JPEG engines (A100, H100/H200) decode without taking SMs from training; GPUs
// without them use the CUDA decoder (GPU_HYBRID: Huffman decoding on the GPU for large
// batches). Images the batched decoder cannot take (progressive scans, unusual chroma
// subsampling, a batch that failed, a job in the other output format) are decoded one at a
// time by nvJPEG's default backend.
//
// NVJPEG_OUTPUT_YUV, what the documentation says:
// * nvjpeg.h (13.0.4, the header we build against): NVJPEG_OUTPUT_YUV "return planar luma and
//   chroma, assuming YCbCr colorspace"; nvjpegDecode is "back-end agnostic", its destination
//   planes sized "using nvjpegGetImageInfo() and minimum required memory buffer for each plane
//   is nPlaneHeight*nPlanePitch where nPlanePitch >= nPlaneWidth for planar output formats";
//   nvjpegDecodeBatched's buffers follow the same rules, its nvjpegDecodeBatchedInitialize
//   takes one output_format for the whole batch; nvjpegGetImageInfo "returns width of each
//   channel. 0 if channel is not encoded"; NVJPEG_BACKEND_HARDWARE "supports baseline JPEG
//   bitstream with single scan. 410 and 411 sub-samplings are not supported" (no word of
//   output formats; such images fail nvjpegDecodeBatchedSupported and are decoded singly).
// * developer.nvidia.com/nvjpeg: "Color space conversion to RGB, BGR, RGBI, BGRI, and YUV".
// * NVIDIA's sample github.com/NVIDIA/CUDALibrarySamples nvJPEG/nvJPEG-Decoder creates
//   NVJPEG_BACKEND_HARDWARE, calls nvjpegDecodeBatchedInitialize(..., params.fmt) with
//   `-fmt yuv` accepted, and gives plane c widths[c] x heights[c] bytes, pitch widths[c], from
//   nvjpegGetImageInfo.
// Nothing we found states the hardware backend's YUV support in so many words, nor the plane
// sizes of odd-sized images: we take the per-component sizes nvjpegGetImageInfo reports
// (libjpeg's are ceil(width * h_samp / max_h_samp)) and ycc_layout() checks that
// they fit a factor of 1, 2 or 4 (else the image is decoded to RGBI). Nor what a grayscale
// image's YUV output writes to channels 1 and 2: ycc_layout() gives them luma-sized room.
// The GPU tests compare the YUV path with the RGBI path on both backends.
#pragma once

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "ycc_rgb.h"

namespace orch::nvjpeg {

/// An nvJPEG failure, with the call and the status in words.
class NvjpegError : public std::runtime_error {
 public:
  NvjpegError(const std::string& what, nvjpegStatus_t status);
  nvjpegStatus_t status() const { return status_; }

 private:
  nvjpegStatus_t status_;
};

const char* status_name(nvjpegStatus_t status);

/// The size of a JPEG and its planes, from its header.
struct ImageInfo {
  int width = 0, height = 0, components = 0;
  nvjpegChromaSubsampling_t subsampling = NVJPEG_CSS_UNKNOWN;
  int plane_width[NVJPEG_MAX_COMPONENT] = {};  ///< per component; 0 where not encoded
  int plane_height[NVJPEG_MAX_COMPONENT] = {};
};

/// What nvJPEG writes.
enum class Output {
  kRgbi,  ///< interleaved RGB, nvJPEG converting (NVJPEG_OUTPUT_RGBI)
  kYuv,   ///< the Y, Cb, Cr planes as decoded (NVJPEG_OUTPUT_YUV)
};

/// One JPEG to decode: its bytes (host) and where its pixels go (device). kRgbi: `dst`, width*3
/// per row. kYuv: plane c at plane[c] with rows pitch[c] apart (Y, Cb, Cr; sizes from
/// ImageInfo's plane_width/plane_height).
struct DecodeJob {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::uint8_t* dst = nullptr;
  int width = 0, height = 0;
  Output output = Output::kRgbi;
  std::uint8_t* plane[3] = {nullptr, nullptr, nullptr};
  std::size_t pitch[3] = {0, 0, 0};
};

/// Where a batch's images go in one device buffer. kRgbi: width * height * 3 bytes each, one
/// after another (the loader's layout before kYuv existed). kYuv: each image's planes as
/// ycc_layout() places them, every image and plane at a multiple of 256 bytes (as separately
/// allocated buffers would be); an image whose planes the crop kernel cannot convert (CMYK, say) is
/// decoded to RGBI instead.
struct BatchLayout {
  std::vector<std::int64_t> offset;  ///< each image's first byte
  std::vector<bool> ycc;             ///< decoded to planes (else interleaved RGB)
  std::vector<YccLayout> planes;     ///< where ycc: the planes, from offset
  std::int64_t bytes = 0;            ///< the buffer's size
};
BatchLayout layout_batch(const std::vector<ImageInfo>& infos, Output output);

/// Image i of `layout` in the buffer at `base`: where nvJPEG writes it, for `data`.
DecodeJob decode_job(const BatchLayout& layout, std::size_t i, const ImageInfo& info,
                     const std::uint8_t* data, std::size_t size, std::uint8_t* base);

/// Pinned host buffers nvJPEG asked for, kept and handed out again instead of freed: its
/// default allocator calls cudaFreeHost, which waits for the whole device, so every time the
/// batched decoder grows a buffer the training stream's work drains. A freed buffer is reused
/// by the next allocation of at most twice its size; everything goes at destruction. Safe
/// only because each Decoder's stream is synchronised after each batch (the loader does), so
/// no copy from a freed buffer is still pending when it is handed out again.
class PinnedPool {
 public:
  PinnedPool() = default;
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;
  nvjpegPinnedAllocatorV2_t allocator();

 private:
  static int malloc_cb(void* ctx, void** ptr, std::size_t size, cudaStream_t stream);
  static int free_cb(void* ctx, void* ptr, std::size_t size, cudaStream_t stream);
  mutable std::mutex m_;
  std::multimap<std::size_t, void*> free_;  // size -> buffer
  std::map<void*, std::size_t> all_;        // buffer -> size
};

/// nvjpegDecodeBatchedPreAllocate's hint (hardware backend only): the engines' device buffers
/// sized up front for `batch` images of up to width x height, any chroma subsampling, so that
/// batches reuse them. nvJPEG's documentation: decoding images of varying sizes "is limited by
/// the repeated cuda calls made by the library to free/allocate device memory"; larger images
/// later only grow the buffers. NVIDIA's nvImageCodec calls it even with a hint of 1x1x1, "due
/// to considerable performance benefit - >20% for 8GPU training". batch 0: not called.
struct Preallocation {
  int batch = 0, width = 0, height = 0;
};

class Decoder {
 public:
  /// `backend`: "hardware" (fails if the GPU has no JPEG engine), "gpu" (the CUDA decoder), or
  /// "auto" (hardware when available, else gpu). With `device_allocator`, the batched decoder
  /// takes device memory from it (stream-ordered, e.g. PyTorch's caching allocator) and pinned
  /// memory from a PinnedPool, instead of cudaMalloc/cudaFree and cudaHostAlloc/cudaFreeHost.
  /// `output` is the batched decoder's format; a job asking for the other one is decoded on
  /// its own. `hw_pipeline` false creates the hardware handle with
  /// NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE (nvJPEG's batch decode on the engines without its
  /// pipelining of a batch's stages); it changes nothing for the CUDA decoder. `preallocate`
  /// applies to the hardware backend only (see Preallocation).
  explicit Decoder(const std::string& backend,
                   const nvjpegDevAllocatorV2_t* device_allocator = nullptr,
                   Output output = Output::kRgbi, bool hw_pipeline = true,
                   Preallocation preallocate = {});
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  /// true when the hardware engines decode.
  bool hardware() const { return hardware_; }
  const char* backend_name() const { return hardware_ ? "hardware" : "gpu"; }
  Output output() const { return output_; }
  /// The hardware decoder's engines and cores per engine (nvjpegGetHardwareDecoderInfo); 0 on
  /// the CUDA decoder or where nvJPEG does not say.
  unsigned hardware_engines() const { return engines_; }
  unsigned cores_per_engine() const { return cores_per_engine_; }

  /// Reads the header; throws NvjpegError for something that is not a JPEG nvJPEG can decode.
  /// Thread-safe.
  ImageInfo info(const std::uint8_t* data, std::size_t size) const;

  /// Decodes every job on `stream` (asynchronous where nvJPEG allows; the host buffers must
  /// stay alive until the stream reaches this point). Returns the indices of the jobs that
  /// failed, each with its error in `errors` (same order); the others are decoded.
  std::vector<std::size_t> decode(const std::vector<DecodeJob>& jobs, cudaStream_t stream,
                                  std::vector<std::string>& errors);

  /// Images decoded one at a time because the batched decoder could not take them.
  std::int64_t single_decodes() const { return single_decodes_.load(); }

  /// Where decode()'s host time went, summed over calls (ms): the per-image "can the batched
  /// decoder take it?" checks (header parse), nvjpegDecodeBatched itself (with its
  /// Initialize), and the one-at-a-time decodes.
  struct Times {
    double check_ms = 0, batched_ms = 0, single_ms = 0;
  };
  Times times() const;

 private:
  bool batch_supported(const DecodeJob& job);
  void decode_single(const DecodeJob& job, cudaStream_t stream);

  std::unique_ptr<PinnedPool> pinned_;  // first: outlives the handles that use it
  bool hardware_ = false;
  Output output_ = Output::kRgbi;
  unsigned engines_ = 0, cores_per_engine_ = 0;
  nvjpegHandle_t batched_ = nullptr;  // hardware or GPU_HYBRID backend
  nvjpegJpegState_t batched_state_ = nullptr;
  int batched_size_ = -1;            // size the batched state was initialised for
  nvjpegHandle_t single_ = nullptr;  // default backend, one image at a time
  nvjpegJpegState_t single_state_ = nullptr;
  nvjpegJpegStream_t parsed_ = nullptr;          // for the per-image "batch supported?" check
  std::atomic<std::int64_t> single_decodes_{0};  // read by the loader's counters() meanwhile
  std::atomic<std::int64_t> check_ns_{0}, batched_ns_{0}, single_ns_{0};  // likewise
};

}  // namespace orch::nvjpeg
