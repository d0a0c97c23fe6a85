// Precision-mode plugins: how the forward pass runs (autocast, dtypes, math modes) and how a
// loss becomes an optimizer step (loss scaling, skipping bad steps).
#pragma once

#include <torch/types.h>

#include <map>
#include <memory>
#include <string>

#include "orch/data_loader.h"
#include "orch/model.h"
#include "orch/optimizer.h"
#include "orch/torch_sdk.h"

namespace orch {

struct PrecisionContext {
  torch::Device device = torch::kCPU;
};

class BOOST_SYMBOL_VISIBLE Precision {
 public:
  virtual ~Precision() = default;
  /// Called once before the model is built: set process-wide math modes (TF32 on or off).
  /// Must set every flag it relies on, since another run may have changed it.
  virtual void configure() = 0;
  /// Forward pass and loss (cross-entropy against batch.labels); batch is on the device.
  /// Returns a float32 scalar loss.
  virtual torch::Tensor forward_loss(Model& model, const Batch& batch) = 0;
  /// Backward and optimizer step; gradients are already reset to none. Must not synchronise
  /// with the host unless it cannot avoid it (a CUDA-graph capture fails if it does). Steps
  /// skipped for non-finite gradients are reported through counters() ("skipped_steps").
  virtual void backward_step(const torch::Tensor& loss, StepOptimizer& optimizer) = 0;
  virtual std::map<std::string, double> counters() const { return {}; }
};

class BOOST_SYMBOL_VISIBLE PrecisionPlugin : public Plugin {
 public:
  virtual std::unique_ptr<Precision> create(const Params& params,
                                            const PrecisionContext& ctx) const = 0;
};

}  // namespace orch
