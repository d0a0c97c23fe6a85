// The amp precision mode's schema. fp16's loss-scaling defaults are torch.amp.GradScaler's.
#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo amp() {
  return {"amp",
          PluginKind::kPrecision,
          "1.1.0",
          "automatic mixed precision: autocast forward, fp32 weights",
          {param("dtype")
               .string()
               .one_of({"bf16", "fp16"})
               .default_("bf16")
               .doc("low-precision type used inside autocast; fp16 adds dynamic loss scaling"),
           param("init_scale")
               .number()
               .min(1)
               .max(16777216)
               .default_(65536)
               .since("1.1.0")
               .doc("fp16 only: the loss scale at the start (GradScaler's init_scale)"),
           param("growth_interval")
               .integer()
               .min(1)
               .max(1000000)
               .default_(2000)
               .since("1.1.0")
               .doc("fp16 only: clean steps in a row before the loss scale doubles")}};
}

}  // namespace orch::plugin_schemas
