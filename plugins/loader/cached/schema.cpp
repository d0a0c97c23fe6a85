// The cached loader's schema: the cache file, then the CPU pipeline's parameters.
#include <orch/loaderkit/loader_params.h>

#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo cached() {
  std::vector<ParamSpec> params = {
      param("path").string().doc("the cache file written by `orch dataset cache`")};
  for (auto& spec : loaderkit::pipeline_params("augmentation threads")) params.push_back(spec);
  return {"cached", PluginKind::kDataLoader, "1.0.0",
          "pre-decoded images from an `orch dataset cache` file (memory-mapped), "
          "random-resized-crop + flip + normalize",
          params};
}

}  // namespace orch::plugin_schemas
