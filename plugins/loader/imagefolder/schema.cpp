// The imagefolder loader's schema: its root, then the parameters it shares with the other
// loaders (loaderkit/loader_params.h).
#include <orch/loaderkit/loader_params.h>

#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo imagefolder() {
  std::vector<ParamSpec> params = {
      param("root").string().doc(
          "the dataset folder: DIR/train/<class>/*.JPEG (or DIR/<class>/*.JPEG); JPEG or PNG "
          "files (.JPEG, .jpg, .png), read by their content"),
      loaderkit::split_param()};
  for (auto& spec : loaderkit::pipeline_params("decoding threads")) params.push_back(spec);
  params.push_back(loaderkit::on_error_param());
  return {"imagefolder", PluginKind::kDataLoader, "1.0.0",
          "JPEG folder (ImageNet layout) decoded on the CPU by worker threads, "
          "random-resized-crop + flip + normalize",
          params};
}

}  // namespace orch::plugin_schemas
