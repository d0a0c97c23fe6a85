// Data-loader plugins: yield batches of images and labels, on the host or already on the device.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "orch/torch_sdk.h"

namespace orch {

/// One training batch. `images` is N x C x H x W (float, or uint8 to be normalised later by the
/// loader's own contract), `labels` is N (int64). Either may live on the host (ideally pinned)
/// or on the device; the stream strategy moves what is not yet on the device.
struct Batch {
  torch::Tensor images;
  torch::Tensor labels;
};

struct LoaderContext {
  std::int64_t batch_size = 64;
  torch::Device device = torch::kCPU;  ///< the run's device; a loader may deliver there directly
  std::int64_t seed = 0;
  /// The run's memory format: a loader that builds batches itself should build them
  /// channels-last when this is set, so no per-step conversion is needed.
  bool channels_last = false;
};

class BOOST_SYMBOL_VISIBLE DataLoader {
 public:
  virtual ~DataLoader() = default;
  /// One sample's shape, C x H x W.
  virtual std::vector<std::int64_t> sample_shape() const = 0;
  virtual std::int64_t num_classes() const = 0;
  /// The next batch; loaders cycle forever (the runner decides how many steps run).
  virtual Batch next() = 0;
  /// Loader-specific counters reported with the run (decode time, bytes read, ...).
  virtual std::map<std::string, double> counters() const { return {}; }
};

class BOOST_SYMBOL_VISIBLE DataLoaderPlugin : public Plugin {
 public:
  virtual std::unique_ptr<DataLoader> create(const Params& params,
                                             const LoaderContext& ctx) const = 0;
};

}  // namespace orch
