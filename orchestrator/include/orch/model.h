// Model plugins: build a trainable network for the run's input shape and class count.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "orch/torch_sdk.h"

namespace orch {

/// What the host tells a model about the run when creating it.
struct ModelContext {
  std::int64_t num_classes = 1000;        ///< from the data loader
  std::vector<std::int64_t> input_shape;  ///< one sample, C x H x W, from the data loader
};

/// A network. The host moves `module()` to the device and memory format, builds the optimizer
/// from its parameters, and calls `forward` inside the precision mode's autocast scope.
class BOOST_SYMBOL_VISIBLE Model {
 public:
  virtual ~Model() = default;
  virtual torch::nn::Module& module() = 0;
  /// images: N x C x H x W; returns logits N x num_classes.
  virtual torch::Tensor forward(const torch::Tensor& images) = 0;
  /// Counts the model wants kept with the run (stored as "model.<name>"), e.g. how many calls
  /// took a fast path and how many fell back, so a result says which code produced it. Read
  /// once, after the measured steps. Default: none.
  virtual std::map<std::string, double> counters() const { return {}; }
};

class BOOST_SYMBOL_VISIBLE ModelPlugin : public Plugin {
 public:
  virtual std::unique_ptr<Model> create(const Params& params, const ModelContext& ctx) const = 0;
};

}  // namespace orch
