// The nvjpeg loader's declared parameters (its schema): names, types, defaults, bounds.
#pragma once

#include <orch/params.h>

#include <vector>

namespace orch::nvjpeg_loader {

std::vector<ParamSpec> nvjpeg_params();

}  // namespace orch::nvjpeg_loader
