// The resnet model plugin's declared parameters (its schema): names, types, defaults, bounds.
#pragma once

#include <orch/params.h>

#include <vector>

namespace orch::resnet {

std::vector<ParamSpec> resnet_params();

}  // namespace orch::resnet
