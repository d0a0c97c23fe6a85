// GradScaler's dynamic loss scaling (see loss_scaler.h).
#include "loss_scaler.h"

#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/ops/_amp_update_scale.h>
#include <torch/torch.h>

#include <map>
#include <stdexcept>
#include <vector>

namespace orch::amp {

LossScaler::LossScaler(torch::Device device, LossScalerOptions options) : options_(options) {
  if (!(options_.init_scale > 0) || options_.growth_interval < 1 || !(options_.growth_factor > 1) ||
      !(options_.backoff_factor > 0 && options_.backoff_factor < 1)) {
    throw std::invalid_argument("amp: invalid loss-scaling options");
  }
  const auto f32 = torch::TensorOptions(device).dtype(torch::kFloat);
  scale_ = torch::full({1}, options_.init_scale, f32);
  growth_tracker_ = torch::zeros({1}, torch::TensorOptions(device).dtype(torch::kInt));
  found_inf_ = torch::zeros({1}, f32);
  skipped_ = torch::zeros({1}, torch::TensorOptions(device).dtype(torch::kDouble));
}

torch::Tensor LossScaler::scale(const torch::Tensor& loss) const { return loss * scale_; }

void LossScaler::step(StepOptimizer& optimizer) {
  torch::NoGradGuard no_grad;
  found_inf_.zero_();
  // GradScaler computes the inverse in double, then rounds it to float once.
  const auto inv_scale = scale_.to(torch::kDouble).reciprocal().to(torch::kFloat);
  // The unscale-and-check op takes tensors of one dtype per call (GradScaler groups them too).
  std::map<c10::ScalarType, std::vector<torch::Tensor>> grads;
  for (const auto& p : optimizer.params()) {
    const auto& g = p.grad();
    if (g.defined()) grads[g.scalar_type()].push_back(g);
  }
  for (auto& [dtype, list] : grads) {
    at::_amp_foreach_non_finite_check_and_unscale_(list, found_inf_, inv_scale);
  }
  // The gradients are unscaled here, by the op that has to read them all anyway to find inf
  // and NaN, so every optimizer gets true gradients the same way. An optimizer that can skip on
  // the device is handed only found_inf: giving it grad_scale too would unscale a second time.
  // (GradScaler instead checks with an inverse scale of 1 and lets the fused kernel divide by
  // the scale; for the power-of-two scales this rule produces, the numbers are identical.)
  if (optimizer.supports_device_unscale()) {
    optimizer.step(std::nullopt, found_inf_);
  } else if (found_inf_.item<float>() == 0.0f) {
    optimizer.step();
  }
  skipped_.add_(found_inf_);
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor,
                         options_.backoff_factor, options_.growth_interval);
}

double LossScaler::current_scale() const { return scale_.item<double>(); }

std::int64_t LossScaler::skipped_steps() const {
  return static_cast<std::int64_t>(skipped_.item<double>());
}

}  // namespace orch::amp
