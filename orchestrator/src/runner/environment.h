// The environment a run executed in (GPU, versions, host), recorded with every result so two
// numbers are never compared without knowing what produced them.
#pragma once

#include <c10/core/Device.h>

#include <nlohmann/json.hpp>

namespace orch {

nlohmann::json collect_environment(const c10::Device& device);

}  // namespace orch
