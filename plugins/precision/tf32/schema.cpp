// The tf32 precision mode's schema: no parameters.
#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo tf32() {
  return {"tf32",
          PluginKind::kPrecision,
          "1.0.0",
          "float32 storage, TF32 math for cuBLAS matmuls and cuDNN convolutions",
          {}};
}

}  // namespace orch::plugin_schemas
