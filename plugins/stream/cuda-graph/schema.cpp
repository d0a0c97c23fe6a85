// The cuda-graph stream strategy's schema; it needs a CUDA device.
#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo cuda_graph() {
  PluginInfo info{"cuda-graph",
                  PluginKind::kStreamStrategy,
                  "1.0.0",
                  "whole training step captured once into a CUDA graph and replayed",
                  {param("warmup_steps")
                       .integer()
                       .min(1)
                       .max(100)
                       .default_(3)
                       .doc("eager steps on the capture stream before capturing (keep steps.warmup "
                            "above it)")}};
  info.needs_cuda = CudaNeed{"", "stream: default"};
  return info;
}

}  // namespace orch::plugin_schemas
