#include "nvjpeg_decoder.h"

#include <algorithm>
#include <chrono>

namespace orch::nvjpeg {
namespace {

void check(nvjpegStatus_t s, const char* call) {
  if (s != NVJPEG_STATUS_SUCCESS) throw NvjpegError(call, s);
}

using Clock = std::chrono::steady_clock;
std::int64_t ns_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

nvjpegOutputFormat_t format_of(Output o) {
  return o == Output::kYuv ? NVJPEG_OUTPUT_YUV : NVJPEG_OUTPUT_RGBI;
}

nvjpegImage_t destination(const DecodeJob& job) {
  nvjpegImage_t img{};
  if (job.output == Output::kYuv) {
    for (int c = 0; c < 3; ++c) {
      img.channel[c] = job.plane[c];
      img.pitch[c] = job.pitch[c];
    }
  } else {
    img.channel[0] = job.dst;
    img.pitch[0] = static_cast<std::size_t>(job.width) * 3;
  }
  return img;
}

}  // namespace

const char* status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS:
      return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG:
      return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "allocator failure (out of memory?)";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "not supported by this GPU";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "incomplete bitstream (truncated file?)";
    default:
      return "unknown status";
  }
}

NvjpegError::NvjpegError(const std::string& what, nvjpegStatus_t status)
    : std::runtime_error(what + ": nvJPEG status " + std::to_string(static_cast<int>(status)) +
                         " (" + status_name(status) + ")"),
      status_(status) {}

BatchLayout layout_batch(const std::vector<ImageInfo>& infos, Output output) {
  constexpr std::int64_t kAlign = 256;
  BatchLayout l;
  l.offset.resize(infos.size());
  l.ycc.resize(infos.size(), false);
  l.planes.resize(infos.size());
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const ImageInfo& info = infos[i];
    std::int64_t bytes = -1;
    if (output == Output::kYuv) {
      l.bytes = (l.bytes + kAlign - 1) / kAlign * kAlign;
      bytes = ycc_layout(info.components, info.plane_width, info.plane_height, l.planes[i], kAlign);
    }
    l.ycc[i] = bytes >= 0;
    if (!l.ycc[i]) bytes = static_cast<std::int64_t>(info.width) * info.height * 3;
    l.offset[i] = l.bytes;
    l.bytes += bytes;
  }
  return l;
}

DecodeJob decode_job(const BatchLayout& layout, std::size_t i, const ImageInfo& info,
                     const std::uint8_t* data, std::size_t size, std::uint8_t* base) {
  DecodeJob job{data, size, base + layout.offset[i], info.width, info.height};
  if (layout.ycc[i]) {
    job.output = Output::kYuv;
    for (int c = 0; c < 3; ++c) {
      job.plane[c] = job.dst + layout.planes[i].offset[c];
      job.pitch[c] = static_cast<std::size_t>(layout.planes[i].pitch[c]);
    }
  }
  return job;
}

PinnedPool::~PinnedPool() {
  for (const auto& [ptr, size] : all_) cudaFreeHost(ptr);  // nothing to do about an error here
}

nvjpegPinnedAllocatorV2_t PinnedPool::allocator() { return {&malloc_cb, &free_cb, this}; }

int PinnedPool::malloc_cb(void* ctx, void** ptr, std::size_t size, cudaStream_t) {
  auto& pool = *static_cast<PinnedPool*>(ctx);
  std::lock_guard<std::mutex> lock(pool.m_);
  const auto it = pool.free_.lower_bound(size);
  if (it != pool.free_.end() && it->first <= 2 * size) {
    *ptr = it->second;
    pool.free_.erase(it);
    return 0;
  }
  if (cudaHostAlloc(ptr, size == 0 ? 1 : size, cudaHostAllocDefault) != cudaSuccess) return 1;
  pool.all_[*ptr] = size;
  return 0;
}

int PinnedPool::free_cb(void* ctx, void* ptr, std::size_t, cudaStream_t) {
  auto& pool = *static_cast<PinnedPool*>(ctx);
  std::lock_guard<std::mutex> lock(pool.m_);
  const auto it = pool.all_.find(ptr);
  if (it == pool.all_.end()) return 1;
  pool.free_.emplace(it->second, ptr);
  return 0;
}

Decoder::Decoder(const std::string& backend, const nvjpegDevAllocatorV2_t* device_allocator,
                 Output output, bool hw_pipeline, Preallocation preallocate)
    : output_(output) {
  if (backend != "auto" && backend != "hardware" && backend != "gpu")
    throw std::invalid_argument("nvjpeg backend '" + backend +
                                "' is not one of auto, hardware, gpu");
  nvjpegDevAllocatorV2_t dev{};
  nvjpegPinnedAllocatorV2_t pinned{};
  if (device_allocator) {
    dev = *device_allocator;
    pinned_ = std::make_unique<PinnedPool>();
    pinned = pinned_->allocator();
  }
  // The batched handle, with our allocators when given (nvJPEG's own otherwise).
  const auto create = [&](nvjpegBackend_t b, nvjpegHandle_t* h) {
    const unsigned flags = b == NVJPEG_BACKEND_HARDWARE && !hw_pipeline
                               ? NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE
                               : NVJPEG_FLAGS_DEFAULT;
    return device_allocator ? nvjpegCreateExV2(b, &dev, &pinned, flags, h)
                            : nvjpegCreateEx(b, nullptr, nullptr, flags, h);
  };
  if (backend != "gpu") {
    const nvjpegStatus_t s = create(NVJPEG_BACKEND_HARDWARE, &batched_);
    if (s == NVJPEG_STATUS_SUCCESS) {
      hardware_ = true;
    } else {
      batched_ = nullptr;
      if (backend == "hardware")
        throw NvjpegError(
            "backend: hardware was asked for, but this GPU's JPEG engine is not "
            "usable (use backend: auto or gpu); nvjpegCreateEx",
            s);
    }
  }
  if (!batched_) check(create(NVJPEG_BACKEND_GPU_HYBRID, &batched_), "nvjpegCreateEx(GPU_HYBRID)");
  check(nvjpegJpegStateCreate(batched_, &batched_state_), "nvjpegJpegStateCreate");
  if (hardware_) {
    // Informative only (the loader's counters): a failure leaves 0.
    if (nvjpegGetHardwareDecoderInfo(batched_, &engines_, &cores_per_engine_) !=
        NVJPEG_STATUS_SUCCESS)
      engines_ = cores_per_engine_ = 0;
    if (preallocate.batch > 0)
      // 4:4:4 so that images of any subsampling reuse the buffers (nvJPEG's documentation).
      check(nvjpegDecodeBatchedPreAllocate(
                batched_, batched_state_, preallocate.batch, std::max(1, preallocate.width),
                std::max(1, preallocate.height), NVJPEG_CSS_444, format_of(output_)),
            "nvjpegDecodeBatchedPreAllocate");
  }
  check(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, 0, &single_),
        "nvjpegCreateEx(DEFAULT)");
  check(nvjpegJpegStateCreate(single_, &single_state_), "nvjpegJpegStateCreate");
  check(nvjpegJpegStreamCreate(batched_, &parsed_), "nvjpegJpegStreamCreate");
}

Decoder::~Decoder() {
  // Destroy functions report errors we cannot act on in a destructor; the handles go either way.
  if (parsed_) nvjpegJpegStreamDestroy(parsed_);
  if (single_state_) nvjpegJpegStateDestroy(single_state_);
  if (single_) nvjpegDestroy(single_);
  if (batched_state_) nvjpegJpegStateDestroy(batched_state_);
  if (batched_) nvjpegDestroy(batched_);
}

ImageInfo Decoder::info(const std::uint8_t* data, std::size_t size) const {
  ImageInfo out;
  check(nvjpegGetImageInfo(single_, data, size, &out.components, &out.subsampling, out.plane_width,
                           out.plane_height),
        "reading the JPEG header");
  if (out.plane_width[0] <= 0 || out.plane_height[0] <= 0)
    throw NvjpegError("the JPEG header gives no image size", NVJPEG_STATUS_BAD_JPEG);
  out.width = out.plane_width[0];
  out.height = out.plane_height[0];
  return out;
}

bool Decoder::batch_supported(const DecodeJob& job) {
  if (nvjpegJpegStreamParseHeader(batched_, job.data, job.size, parsed_) != NVJPEG_STATUS_SUCCESS)
    return false;
  int not_supported = 1;  // nvJPEG's convention: 0 means supported
  if (nvjpegDecodeBatchedSupported(batched_, parsed_, &not_supported) != NVJPEG_STATUS_SUCCESS)
    return false;
  return not_supported == 0;
}

void Decoder::decode_single(const DecodeJob& job, cudaStream_t stream) {
  nvjpegImage_t dst = destination(job);
  check(
      nvjpegDecode(single_, single_state_, job.data, job.size, format_of(job.output), &dst, stream),
      "nvjpegDecode");
  ++single_decodes_;
}

std::vector<std::size_t> Decoder::decode(const std::vector<DecodeJob>& jobs, cudaStream_t stream,
                                         std::vector<std::string>& errors) {
  std::vector<std::size_t> batch, single, failed;
  // One output format per batch (nvjpegDecodeBatchedInitialize): a job in the other one is
  // decoded on its own.
  const auto t_check = Clock::now();
  for (std::size_t i = 0; i < jobs.size(); ++i)
    (jobs[i].output != output_ || (hardware_ && !batch_supported(jobs[i])) ? single : batch)
        .push_back(i);
  check_ns_ += ns_since(t_check);

  if (!batch.empty()) {
    std::vector<const unsigned char*> data;
    std::vector<std::size_t> sizes;
    std::vector<nvjpegImage_t> dst;
    for (std::size_t i : batch) {
      data.push_back(jobs[i].data);
      sizes.push_back(jobs[i].size);
      dst.push_back(destination(jobs[i]));
    }
    const auto t_batched = Clock::now();
    nvjpegStatus_t s = NVJPEG_STATUS_SUCCESS;
    if (batched_size_ != static_cast<int>(batch.size())) {
      s = nvjpegDecodeBatchedInitialize(batched_, batched_state_, static_cast<int>(batch.size()), 1,
                                        format_of(output_));
      batched_size_ = s == NVJPEG_STATUS_SUCCESS ? static_cast<int>(batch.size()) : -1;
    }
    if (s == NVJPEG_STATUS_SUCCESS)
      s = nvjpegDecodeBatched(batched_, batched_state_, data.data(), sizes.data(), dst.data(),
                              stream);
    batched_ns_ += ns_since(t_batched);
    if (s != NVJPEG_STATUS_SUCCESS) {
      // One bad image fails the whole batch: find it by decoding each on its own.
      batched_size_ = -1;  // re-initialise next time ("also used to reset failed batches")
      single.insert(single.end(), batch.begin(), batch.end());
    }
  }
  const auto t_single = Clock::now();
  for (std::size_t i : single) {
    try {
      decode_single(jobs[i], stream);
    } catch (const std::exception& e) {
      failed.push_back(i);
      errors.emplace_back(e.what());
    }
  }
  if (!single.empty()) single_ns_ += ns_since(t_single);
  return failed;
}

Decoder::Times Decoder::times() const {
  return {static_cast<double>(check_ns_.load()) / 1e6,
          static_cast<double>(batched_ns_.load()) / 1e6,
          static_cast<double>(single_ns_.load()) / 1e6};
}

}  // namespace orch::nvjpeg
