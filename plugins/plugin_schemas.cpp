// The list of the shipped plugins' schemas (plugin_schemas.h).
#include "plugin_schemas.h"

namespace orch::plugin_schemas {

std::vector<PluginInfo> all() {
  return {resnet(),       torchscript(), synthetic(),   imagefolder(), cached(),
          nvjpeg(),       fp32(),        tf32(),        amp(),         default_stream(),
          copy_overlap(), cuda_graph(),  multi_stream()};
}

}  // namespace orch::plugin_schemas
