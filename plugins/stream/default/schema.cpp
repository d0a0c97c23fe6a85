// The default stream strategy's schema: no parameters.
#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo default_stream() {
  return {"default",
          PluginKind::kStreamStrategy,
          "1.0.0",
          "one stream; batch copy and compute in order",
          {}};
}

}  // namespace orch::plugin_schemas
