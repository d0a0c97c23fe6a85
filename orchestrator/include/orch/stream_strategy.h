// Stream-strategy plugins: the shape of the training loop. Where batches are copied to the
// device, which stream computes, whether a step is captured into a CUDA graph.
#pragma once

#include <torch/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "orch/data_loader.h"
#include "orch/torch_sdk.h"

namespace orch {

/// What the host hands a strategy: the pieces of one step, already wired to the model,
/// precision mode and optimizer. The strategy decides when and on which stream they run. Each
/// piece runs on the calling thread's current CUDA stream and never synchronises by itself.
struct StepFunctions {
  /// The loader's next batch, wherever the loader delivers it (host or device).
  std::function<Batch()> next_batch;
  /// Moves a batch to the run's device and memory format; `non_blocking` for pinned sources.
  std::function<Batch(const Batch&, bool non_blocking)> to_device;
  /// Resets every gradient to none.
  std::function<void()> zero_grad;
  /// Forward pass and loss for a batch on the device (inside the precision mode's autocast).
  std::function<torch::Tensor(const Batch&)> forward_loss;
  /// Backward pass and optimizer step for a loss (loss scaling included).
  std::function<void(const torch::Tensor&)> backward_step;
  /// zero_grad + forward_loss + backward_step. Returns the detached (device) loss.
  std::function<torch::Tensor(const Batch&)> train_step;
};

struct StrategyContext {
  torch::Device device = torch::kCPU;
};

/// The result of one step as the strategy saw it.
struct StepResult {
  torch::Tensor loss;         ///< device scalar; read by the host only after the timed loop
  double data_wait_ms = 0.0;  ///< host time spent waiting for the loader
};

class BOOST_SYMBOL_VISIBLE StreamStrategy {
 public:
  virtual ~StreamStrategy() = default;
  virtual StepResult step(StepFunctions& fns) = 0;
  virtual std::map<std::string, double> counters() const { return {}; }
};

class BOOST_SYMBOL_VISIBLE StreamStrategyPlugin : public Plugin {
 public:
  virtual std::unique_ptr<StreamStrategy> create(const Params& params,
                                                 const StrategyContext& ctx) const = 0;
};

}  // namespace orch
