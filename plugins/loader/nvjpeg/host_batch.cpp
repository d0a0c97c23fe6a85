#include "host_batch.h"

#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/image_codec.h>
#include <orch/imagedata/parallel.h>
#include <orch/imagedata/resample.h>
#include <orch/loaderkit/batch_pipeline.h>

#include <exception>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace orch::nvjpeg_loader {
namespace {

// The imagefolder loader's crop of an image, from the same generator: its RGB pixels.
std::vector<std::uint8_t> augmented_rgb(const std::vector<std::uint8_t>& bytes,
                                        imagedata::SampleRng& rng, int size) {
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(3) * size * size);
  imagedata::augment_image(bytes.data(), bytes.size(), rng, size, rgb.data());
  return rgb;
}

// One batch's rows as the reading threads fill them. The per-row tallies have a slot per row,
// so that the threads share no counter but the two maps under counts_mutex_; they are summed
// into the batch once every row is done.
class BatchReader {
 public:
  BatchReader(const imagedata::FolderIndex& index, const Options& o, const nvjpeg::Decoder& decoder,
              HostBatch& h)
      : index_(index),
        o_(o),
        decoder_(decoder),
        h_(h),
        n_(static_cast<std::int64_t>(index.samples.size())),
        cpu_out_(h.cpu_images.defined() ? h.cpu_images.data_ptr<float>() : nullptr),
        skipped_(h.samples.size(), 0),
        cpu_ms_(h.samples.size(), 0.0),
        file_bytes_(h.samples.size(), 0) {}

  // Row u from its sample, or with on_error: skip from the next readable one of the dataset.
  void read_row(std::size_t u) {
    for (std::int64_t tries = 0;; ++tries) {
      const std::int64_t k = (h_.samples[u] + tries) % n_;
      const auto& sample = index_.samples[static_cast<std::size_t>(k)];
      try {
        h_.bytes[u] = imagedata::read_file(sample.path);  // names the path itself
        auto rng =
            imagedata::SampleRng::for_sample(o_.seed, h_.epoch, static_cast<std::uint64_t>(k));
        h_.fallback[u] = torch::Tensor();
        const char* fallback = decode_if_on_cpu(u, rng, sample);
        keep(u, fallback, rng, sample, k);
        return;
      } catch (const std::exception& e) {
        if (!o_.skip_errors) throw;
        count_skip(u, e);
        if (tries + 1 >= n_)
          throw std::runtime_error(std::string("every image failed to load; the last: ") +
                                   e.what());
      }
    }
  }

  void add_tallies() {
    for (std::size_t i = 0; i < skipped_.size(); ++i) {
      h_.skipped += skipped_[i];
      h_.cpu_decode_ms += cpu_ms_[i];
      h_.bytes_read += file_bytes_[i];
    }
  }

 private:
  // Decodes row u on the CPU when it is a CPU row or one nvJPEG cannot take; returns why nvJPEG
  // cannot take it ("" when it can, and for CPU rows). Its errors name the file.
  const char* decode_if_on_cpu(std::size_t u, imagedata::SampleRng& rng,
                               const imagedata::FolderSample& sample) {
    const char* fallback = "";
    try {
      if (u >= h_.gpu_count) {
        const auto pixels_per_image = 3LL * o_.image_size * o_.image_size;
        decode_on_cpu(u, rng,
                      cpu_out_ + static_cast<std::int64_t>(u - h_.gpu_count) * pixels_per_image);
      } else if (*(fallback = cpu_only(u, h_.infos[u]))) {
        torch::Tensor row = pinned_float_rows(1, o_);
        decode_on_cpu(u, rng, row.data_ptr<float>());
        h_.fallback[u] = row;
      }
    } catch (const imagedata::DatasetError& e) {
      throw imagedata::with_path(sample.path.string(), e);
    } catch (const std::exception& e) {
      throw std::runtime_error(sample.path.string() + ": " + e.what());
    }
    return fallback;
  }

  // The imagefolder loader's decode of row u: the same crop from the same generator, into
  // `dst` (normalised floats).
  void decode_on_cpu(std::size_t u, imagedata::SampleRng& rng, float* dst) {
    const auto t0 = Clock::now();
    const int size = o_.image_size;
    std::vector<std::uint8_t> rgb = augmented_rgb(h_.bytes[u], rng, size);
    imagedata::normalize_imagenet(rgb.data(), size, size, o_.channels_last, dst);
    cpu_ms_[u] += ms_since(t0);
    file_bytes_[u] = h_.bytes[u].size();
    h_.bytes[u] = {};  // decoded: the bytes need not wait for the GPU
  }

  // Why nvJPEG cannot take row u's file, or "" when it can (and its header is in `info`).
  const char* cpu_only(std::size_t u, nvjpeg::ImageInfo& info) const {
    const auto& bytes = h_.bytes[u];
    if (imagedata::sniff_format(bytes.data(), bytes.size()) != imagedata::ImageFormat::kJpeg)
      return imagedata::sniff_format(bytes.data(), bytes.size()) == imagedata::ImageFormat::kPng
                 ? "png"
                 : "refused";
    try {
      info = decoder_.info(bytes.data(), bytes.size());
    } catch (const std::exception&) {
      return "refused";  // the CPU decoder decodes it, or says what is wrong with it
    }
    return info.components == 4 ? "cmyk" : "";  // CMYK or YCCK
  }

  // Row u read and decoded as sample k: a GPU row keeps the crop nvJPEG's output will get.
  void keep(std::size_t u, const char* fallback, imagedata::SampleRng& rng,
            const imagedata::FolderSample& sample, std::int64_t k) {
    if (*fallback) {
      std::lock_guard<std::mutex> lock(counts_mutex_);
      ++h_.fallback_kinds[fallback];
    } else if (u < h_.gpu_count) {
      h_.augment[u] = imagedata::choose_augment(h_.infos[u].width, h_.infos[u].height, rng);
      file_bytes_[u] = h_.bytes[u].size();
    }
    h_.labels[u] = sample.label;
    h_.samples[u] = k;
  }

  void count_skip(std::size_t u, const std::exception& e) {
    ++skipped_[u];
    std::lock_guard<std::mutex> lock(counts_mutex_);
    ++h_.skipped_by_reason[loaderkit::skip_reason(e)];
  }

  const imagedata::FolderIndex& index_;
  const Options& o_;
  const nvjpeg::Decoder& decoder_;
  HostBatch& h_;
  const std::int64_t n_;
  float* const cpu_out_;  // row gpu_count of cpu_images
  std::vector<std::int64_t> skipped_;
  std::vector<double> cpu_ms_;
  std::vector<std::uint64_t> file_bytes_;  // of the file each row ended up with
  std::mutex counts_mutex_;                // h_.fallback_kinds, h_.skipped_by_reason
};

}  // namespace

HostBatch read_host_batch(const imagedata::FolderIndex& index, const Options& o,
                          const nvjpeg::Decoder& decoder, std::uint64_t epoch,
                          std::vector<std::int64_t> samples) {
  HostBatch h;
  h.epoch = epoch;
  const std::size_t count = samples.size();
  h.samples = std::move(samples);
  h.gpu_count = count - cpu_rows(count, o.cpu_share);
  h.bytes.resize(count);
  h.infos.resize(count);
  h.augment.resize(count);
  h.labels.resize(count);
  if (h.gpu_count < count)
    h.cpu_images = pinned_float_rows(static_cast<std::int64_t>(count - h.gpu_count), o);
  h.fallback.resize(count);
  BatchReader reader(index, o, decoder, h);
  imagedata::parallel_for(static_cast<std::int64_t>(count), o.workers,
                          [&](std::int64_t i) { reader.read_row(static_cast<std::size_t>(i)); });
  reader.add_tallies();
  return h;
}

torch::Tensor decode_on_host(const std::vector<std::uint8_t>& bytes, imagedata::SampleRng rng,
                             const Options& o) {
  const int size = o.image_size;
  std::vector<std::uint8_t> rgb = augmented_rgb(bytes, rng, size);
  torch::Tensor row = pinned_float_rows(1, o);
  imagedata::normalize_imagenet(rgb.data(), size, size, o.channels_last, row.data_ptr<float>());
  return row;
}

}  // namespace orch::nvjpeg_loader
