// nvJPEG batched decoding into interleaved RGB on the device, torch-free. The hardware JPEG
// engines (A100, H100/H200) decode without taking SMs from training; GPUs without them use the
// CUDA decoder (GPU_HYBRID: Huffman decoding on the GPU for large batches). Images the batched
// decoder cannot take (progressive scans, unusual chroma subsampling, a batch that failed) are
// decoded one at a time by nvJPEG's default backend.
#pragma once

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

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

/// The size of a JPEG, from its header.
struct ImageInfo {
  int width = 0, height = 0, components = 0;
};

/// One JPEG to decode: its bytes (host) and where its RGB pixels go (device, width*3 per row).
struct DecodeJob {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::uint8_t* dst = nullptr;
  int width = 0, height = 0;
};

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

class Decoder {
 public:
  /// `backend`: "hardware" (fails if the GPU has no JPEG engine), "gpu" (the CUDA decoder), or
  /// "auto" (hardware when available, else gpu). With `device_allocator`, the batched decoder
  /// takes device memory from it (stream-ordered, e.g. PyTorch's caching allocator) and pinned
  /// memory from a PinnedPool, instead of cudaMalloc/cudaFree and cudaHostAlloc/cudaFreeHost.
  explicit Decoder(const std::string& backend,
                   const nvjpegDevAllocatorV2_t* device_allocator = nullptr);
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  /// true when the hardware engines decode.
  bool hardware() const { return hardware_; }
  const char* backend_name() const { return hardware_ ? "hardware" : "gpu"; }

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

 private:
  bool batch_supported(const DecodeJob& job);
  void decode_single(const DecodeJob& job, cudaStream_t stream);

  std::unique_ptr<PinnedPool> pinned_;  // first: outlives the handles that use it
  bool hardware_ = false;
  nvjpegHandle_t batched_ = nullptr;  // hardware or GPU_HYBRID backend
  nvjpegJpegState_t batched_state_ = nullptr;
  int batched_size_ = -1;            // size the batched state was initialised for
  nvjpegHandle_t single_ = nullptr;  // default backend, one image at a time
  nvjpegJpegState_t single_state_ = nullptr;
  nvjpegJpegStream_t parsed_ = nullptr;  // for the per-image "batch supported?" check
  std::atomic<std::int64_t> single_decodes_{0};  // read by the loader's counters() meanwhile
};

}  // namespace orch::nvjpeg
