// Dynamic loss scaling for fp16 mixed precision, with exactly the rule of PyTorch's
// torch.amp.GradScaler: the loss is multiplied by a scale before backward; the gradients are
// unscaled and checked for inf/NaN; a step with a non-finite gradient is skipped and the scale
// multiplied by backoff_factor; after growth_interval clean steps in a row it is multiplied by
// growth_factor. Kept apart from the plugin so the tests can drive it directly.
#pragma once

#include <orch/optimizer.h>
#include <torch/types.h>

#include <cstdint>

namespace orch::amp {

/// GradScaler's defaults.
struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  LossScaler(torch::Device device, LossScalerOptions options = {});

  /// loss * scale, the tensor to call backward() on.
  torch::Tensor scale(const torch::Tensor& loss) const;
  /// After backward on scale(loss): unscales the gradients of optimizer.params(), steps unless
  /// one of them is inf or NaN, and updates the scale. Synchronises with the host only when the
  /// optimizer cannot skip on the device (one read of the inf flag, as GradScaler does).
  void step(StepOptimizer& optimizer);

  /// The current scale (reads the device).
  double current_scale() const;
  /// Steps skipped so far (reads the device).
  std::int64_t skipped_steps() const;

 private:
  LossScalerOptions options_;
  torch::Tensor scale_;           ///< float32 [1], on the device
  torch::Tensor growth_tracker_;  ///< int32 [1]: clean steps in a row since the last change
  torch::Tensor found_inf_;       ///< float32 [1]: 1.0 when this step's gradients are not finite
  torch::Tensor skipped_;         ///< float64 [1]: sum of found_inf over all steps
};

}  // namespace orch::amp
