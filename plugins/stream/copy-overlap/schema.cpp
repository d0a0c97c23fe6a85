// The copy-overlap stream strategy's schema: no parameters.
#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo copy_overlap() {
  return {"copy-overlap",
          PluginKind::kStreamStrategy,
          "1.0.0",
          "next batch copied host->device on a side stream while the current step computes",
          {}};
}

}  // namespace orch::plugin_schemas
