// The torchscript model plugin's schema: the archive, whose bytes are part of the configuration.
#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo torchscript() {
  return {"torchscript",
          PluginKind::kModel,
          "1.0.0",
          "a TorchScript module exported from Python (torch.jit.script(model).save(path))",
          {param("path").string().hash_file_content().doc(
              "the .pt archive; relative to the current directory (like data.root); its "
              "content is part of the configuration")}};
}

}  // namespace orch::plugin_schemas
