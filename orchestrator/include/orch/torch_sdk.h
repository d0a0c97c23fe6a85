// Shared by the kind headers that use LibTorch: stamps plugins with the LibTorch version they
// were compiled against, so the host can refuse a plugin built for another LibTorch.
#pragma once

#include <torch/version.h>

#ifndef ORCH_TORCH_VERSION_STRING
#define ORCH_TORCH_VERSION_STRING TORCH_VERSION
#endif

#include "orch/plugin.h"
