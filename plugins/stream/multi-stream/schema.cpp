// The multi-stream strategy's schema.
#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo multi_stream() {
  return {"multi-stream",
          PluginKind::kStreamStrategy,
          "1.0.0",
          "batch split into micro-batches whose forward passes run on N streams at once",
          {param("streams").integer().min(1).max(16).default_(2).doc(
              "number of concurrent streams (and micro-batches)")}};
}

}  // namespace orch::plugin_schemas
