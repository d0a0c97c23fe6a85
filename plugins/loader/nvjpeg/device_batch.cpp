#include "device_batch.h"

#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/sample_random.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "crop_resize.h"

namespace orch::nvjpeg_loader {
namespace {

// One batch's way to the device. Everything the GPU reads (the pixel buffer, the crop jobs, the
// labels) is a member, so that it outlives the stream's synchronisation at the end of run().
class DeviceDecode {
 public:
  DeviceDecode(const imagedata::FolderIndex& index, const Options& o, nvjpeg::Decoder& decoder,
               const c10::cuda::CUDAStream& stream, HostBatch& h)
      : index_(index),
        o_(o),
        decoder_(decoder),
        stream_(stream),
        h_(h),
        dev_(torch::TensorOptions().device(torch::kCUDA, stream.device_index())) {}

  std::unique_ptr<DeviceBatch> run(DecodeTimes& times) {
    const std::size_t count = h_.samples.size();
    const std::size_t g = h_.gpu_count;  // rows 0..g-1 decoded by nvJPEG
    out_ = std::make_unique<DeviceBatch>();
    out_->images =
        torch::empty({static_cast<std::int64_t>(count), 3, o_.image_size, o_.image_size},
                     dev_.dtype(torch::kFloat32)
                         .memory_format(o_.channels_last ? at::MemoryFormat::ChannelsLast
                                                         : at::MemoryFormat::Contiguous));
    host_labels_ = torch::empty({static_cast<std::int64_t>(count)},
                                torch::TensorOptions().dtype(torch::kInt64).pinned_memory(true));
    for (std::size_t i = g; i < count; ++i) host_labels_.data_ptr<std::int64_t>()[i] = h_.labels[i];
    // The GPU rows nvJPEG decodes: all but those decoded on the CPU instead (h.fallback).
    for (std::size_t i = 0; i < g; ++i)
      if (!h_.fallback[i].defined()) rows_.push_back(i);
    for (std::size_t i = 0; i < g; ++i)
      if (h_.fallback[i].defined()) host_labels_.data_ptr<std::int64_t>()[i] = h_.labels[i];
    if (!rows_.empty()) decode_rows(times);
    copy_cpu_rows();
    out_->labels = host_labels_.to(dev_, /*non_blocking=*/true);
    out_->ready.record(stream_);
    // The host buffers (file bytes, pinned jobs, labels and CPU rows) must outlive the GPU's
    // reads of them, and this decoder's state is reused by its next batch. It also keeps the
    // next batch safe from an nvJPEG bug: on the hardware engines nvjpegDecodeBatched writes
    // its destinations when called, not when the stream gets there (torchcodec#1634: H100,
    // nvJPEG versions 12.3 to 13.2), so a buffer the caching allocator hands out again on this
    // stream must have no work pending on it; after this wait there is none. Meanwhile the other
    // producers decode and this one's next files are being read.
    const auto t_wait = Clock::now();
    stream_.synchronize();
    times.gpu_wait_ms = ms_since(t_wait);
    return std::move(out_);
  }

 private:
  // nvJPEG's rows into one device buffer, then the crop kernel over every GPU row.
  void decode_rows(DecodeTimes& times) {
    // Each image at its offset in one device buffer: interleaved RGB, or with output: yuv its
    // Y, Cb and Cr planes.
    const std::size_t r = rows_.size();
    infos_.resize(r);
    for (std::size_t c = 0; c < r; ++c) infos_[c] = h_.infos[rows_[c]];
    layout_ = nvjpeg::layout_batch(infos_, decoder_.output());
    pixels_ = torch::empty({layout_.bytes}, dev_.dtype(torch::kUInt8));
    std::uint8_t* const base = pixels_.data_ptr<std::uint8_t>();
    std::vector<nvjpeg::DecodeJob> jobs(r);
    for (std::size_t c = 0; c < r; ++c)
      jobs[c] = nvjpeg::decode_job(layout_, c, infos_[c], h_.bytes[rows_[c]].data(),
                                   h_.bytes[rows_[c]].size(), base);
    std::vector<std::string> errors;
    const auto t_nvjpeg = Clock::now();
    const std::vector<std::size_t> failed = decoder_.decode(jobs, stream_.stream(), errors);
    times.nvjpeg_ms = ms_since(t_nvjpeg);
    const std::vector<bool> bad = fall_back(failed);
    std::optional<std::size_t> good;
    for (std::size_t c = 0; c < r && !good; ++c)
      if (!bad[c]) good = c;
    if (!good)
      throw std::runtime_error("no image of a batch decoded; the first error: " + errors[0]);
    write_crop_jobs(bad, *good);
    launch_crop(base);
  }

  // A file whose header parsed but whose data nvJPEG did not decode goes to the CPU decoder,
  // which decodes it (counted as a fallback, `refused`) or says what is wrong with it (a
  // truncated file, say): then with on_error: skip its place goes to another GPU row of this
  // batch, counted as skipped by that reason; without, the run fails naming it. Returns which
  // of nvJPEG's rows are such places.
  std::vector<bool> fall_back(const std::vector<std::size_t>& failed) {
    std::vector<bool> bad(rows_.size(), false);
    for (std::size_t f = 0; f < failed.size(); ++f) {
      const std::size_t i = rows_[failed[f]];
      const auto k = static_cast<std::uint64_t>(h_.samples[i]);
      const auto& path = index_.samples[static_cast<std::size_t>(k)].path;
      try {
        h_.fallback[i] =
            decode_on_host(h_.bytes[i], imagedata::SampleRng::for_sample(o_.seed, h_.epoch, k), o_);
        ++h_.fallback_kinds["refused"];
      } catch (const imagedata::DatasetError& e) {
        if (!o_.skip_errors) throw imagedata::with_path(path.string(), e);
        bad[failed[f]] = true;
        ++h_.skipped;
        ++h_.skipped_by_reason[e.reason()];
      }
    }
    return bad;
  }

  // One crop job per GPU row; a CPU-decoded row gets the `good` row's, overwritten by its copy.
  void write_crop_jobs(const std::vector<bool>& bad, std::size_t good) {
    const std::size_t g = h_.gpu_count, r = rows_.size();
    host_jobs_ = torch::empty({static_cast<std::int64_t>(g * sizeof(nvjpeg::CropJob))},
                              torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
    auto* cj = reinterpret_cast<nvjpeg::CropJob*>(host_jobs_.data_ptr<std::uint8_t>());
    for (std::size_t i = 0, c = 0; i < g; ++i) {
      const bool decoded = c < r && rows_[c] == i;
      const std::size_t src = decoded && !bad[c] ? c : good;
      if (decoded) ++c;
      cj[i] = crop_job(src);
      // A row decoded on the CPU keeps its own label; a skipped one takes its substitute's.
      host_labels_.data_ptr<std::int64_t>()[i] =
          h_.fallback[i].defined() ? h_.labels[i] : h_.labels[rows_[src]];
    }
  }

  nvjpeg::CropJob crop_job(std::size_t src) const {
    const auto& a = h_.augment[rows_[src]];
    return {layout_.offset[src],
            infos_[src].width,
            infos_[src].height,
            static_cast<float>(a.crop.x),
            static_cast<float>(a.crop.y),
            static_cast<float>(a.crop.w),
            static_cast<float>(a.crop.h),
            a.flip ? 1 : 0,
            layout_.ycc[src] ? nvjpeg::kCropYcc : nvjpeg::kCropRgbi,
            layout_.planes[src]};
  }

  void launch_crop(const std::uint8_t* base) {
    device_jobs_ = host_jobs_.to(dev_, /*non_blocking=*/true);
    const cudaError_t e = nvjpeg::crop_resize_normalize(
        reinterpret_cast<const nvjpeg::CropJob*>(device_jobs_.data_ptr<std::uint8_t>()),
        static_cast<int>(h_.gpu_count), base, o_.image_size, o_.channels_last,
        out_->images.data_ptr<float>(), stream_.stream());
    if (e != cudaSuccess)
      throw std::runtime_error(std::string("the crop/resize kernel did not start: ") +
                               cudaGetErrorString(e));
  }

  // After the crop kernel on the same stream, so that they overwrite its rows.
  void copy_cpu_rows() {
    const std::size_t count = h_.samples.size(), g = h_.gpu_count;
    // The GPU rows decoded on the CPU.
    for (std::size_t i = 0; i < g; ++i)
      if (h_.fallback[i].defined())
        out_->images.narrow(0, static_cast<std::int64_t>(i), 1)
            .copy_(h_.fallback[i], /*non_blocking=*/true);
    if (g < count) {
      // The CPU rows: one copy, the batch dimension being outermost in either layout.
      out_->images.narrow(0, static_cast<std::int64_t>(g), static_cast<std::int64_t>(count - g))
          .copy_(h_.cpu_images, /*non_blocking=*/true);
    }
  }

  const imagedata::FolderIndex& index_;
  const Options& o_;
  nvjpeg::Decoder& decoder_;
  const c10::cuda::CUDAStream& stream_;
  HostBatch& h_;
  const torch::TensorOptions dev_;
  std::unique_ptr<DeviceBatch> out_;
  torch::Tensor host_labels_, pixels_, host_jobs_, device_jobs_;
  std::vector<std::size_t> rows_;         // the GPU rows nvJPEG decodes
  std::vector<nvjpeg::ImageInfo> infos_;  // theirs, in rows_' order
  nvjpeg::BatchLayout layout_;            // of pixels_, in rows_' order
};

}  // namespace

std::unique_ptr<DeviceBatch> decode_on_device(const imagedata::FolderIndex& index, const Options& o,
                                              nvjpeg::Decoder& decoder,
                                              const c10::cuda::CUDAStream& stream, HostBatch& h,
                                              DecodeTimes& times) {
  DeviceDecode d(index, o, decoder, stream, h);
  return d.run(times);
}

}  // namespace orch::nvjpeg_loader
