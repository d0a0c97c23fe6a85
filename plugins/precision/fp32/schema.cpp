// The fp32 precision mode's schema: no parameters.
#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo fp32() {
  return {"fp32", PluginKind::kPrecision, "1.0.0", "float32 everywhere, TF32 disabled", {}};
}

}  // namespace orch::plugin_schemas
