// SGD with momentum and weight decay behind the SDK's StepOptimizer, built from the
// experiment's `optimizer` settings.
#pragma once

#include <memory>
#include <vector>

#include "orch/optimizer.h"
#include "plan/run_spec.h"

namespace orch {

/// Builds the optimizer for `params` (the model's parameters, already on the device).
std::unique_ptr<StepOptimizer> make_optimizer(const OptimizerSpec& spec,
                                              std::vector<torch::Tensor> params);

}  // namespace orch
