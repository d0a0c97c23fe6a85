// The loader's settings and the small helpers its stages (reading, decoding, the producer
// threads) share.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace orch::nvjpeg_loader {

/// Set whole by the plugin's create() from the run and the parameters, whose defaults only the
/// schema states (schema.cpp); the zeros here say nothing of them.
struct Options {
  int image_size = 0, workers = 0, prefetch = 0, decoders = 0;
  bool hw_pipeline = false;  // NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE when false
  bool shuffle = false, drop_last = false, skip_errors = false, channels_last = false;
  std::map<std::string, std::int64_t> skipped_at_start;  // the folder scan's skips, by reason
  bool torch_allocator = false;
  bool yuv = false;  // output: yuv
  double cpu_share = 0;
  bool hw_preallocate = false;
  std::uint64_t seed = 0;
  std::int64_t batch_size = 0;
  std::string crop_unavailable;  // why the GPU cannot run the crop kernel ("" = it can)
};

/// How many of a batch's `count` images cpu_share sends to the CPU: the last ones.
inline std::size_t cpu_rows(std::size_t count, double cpu_share) {
  const auto k = static_cast<std::size_t>(std::llround(cpu_share * static_cast<double>(count)));
  return std::min(k, count);
}

/// `rows` images of the batch decoded on the CPU: pinned, so that their copies to the device are
/// asynchronous, and in the batch's layout, so that each is one copy.
inline torch::Tensor pinned_float_rows(std::int64_t rows, const Options& o) {
  return torch::empty({rows, 3, o.image_size, o.image_size},
                      torch::TensorOptions()
                          .dtype(torch::kFloat32)
                          .pinned_memory(true)
                          .memory_format(o.channels_last ? at::MemoryFormat::ChannelsLast
                                                         : at::MemoryFormat::Contiguous));
}

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace orch::nvjpeg_loader
