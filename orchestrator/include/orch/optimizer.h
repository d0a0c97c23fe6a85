// The optimizer as a precision mode sees it: something that applies one update from the
// parameters' gradients. The host builds it from the experiment's `optimizer` settings (SGD with
// momentum and weight decay, implemented as a per-tensor loop, multi-tensor foreach ops, or
// ATen's fused kernel); precision plugins only call step().
#pragma once

#include <torch/types.h>

#include <optional>
#include <vector>

#include "orch/torch_sdk.h"

namespace orch {

class BOOST_SYMBOL_VISIBLE StepOptimizer {
 public:
  virtual ~StepOptimizer() = default;
  /// The parameters this optimizer updates (their .grad() holds the gradients).
  virtual const std::vector<torch::Tensor>& params() const = 0;
  /// Resets every gradient to none (undefined), like zero_grad(set_to_none=True).
  virtual void zero_grad() = 0;
  /// Applies one update. With `grad_scale` (a 1-element float tensor on the device) the
  /// gradients are first divided by it; with `found_inf` (1-element float on the device, 1.0
  /// means skip, as at::_amp_foreach_non_finite_check_and_unscale_ writes it; ATen's fused
  /// kernels test for exactly 1.0) the update is skipped. Only implementations for which
  /// supports_device_unscale() is true accept them; the others throw std::invalid_argument if
  /// either is given.
  virtual void step(const std::optional<torch::Tensor>& grad_scale = std::nullopt,
                    const std::optional<torch::Tensor>& found_inf = std::nullopt) = 0;
  /// True when step() can unscale and skip on the device (no host synchronisation), which a
  /// CUDA-graph-captured step with loss scaling needs.
  virtual bool supports_device_unscale() const = 0;
};

}  // namespace orch
