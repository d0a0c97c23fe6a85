// The synthetic loader's schema.
#include "plugin_schemas.h"

namespace orch::plugin_schemas {

PluginInfo synthetic() {
  return {
      "synthetic",
      PluginKind::kDataLoader,
      "1.0.0",
      "random ImageNet-shaped batches made once on the device (no input cost)",
      {param("image_size")
           .integer()
           .min(8)
           .max(1024)
           .default_(224)
           .doc("height and width of each image"),
       param("channels").integer().min(1).max(16).default_(3).doc("channels per image"),
       param("classes").integer().min(1).default_(1000).doc("number of classes"),
       param("batches").integer().min(1).max(1024).default_(4).doc(
           "distinct batches generated, then served in a cycle"),
       param("location")
           .string()
           .one_of({"device", "pinned", "pageable"})
           .default_("device")
           .doc("where batches live: on the device, or in pinned/pageable host memory"),
       param("delay_ms")
           .number()
           .min(0)
           .max(60000)
           .default_(0)
           .hash_exempt_since("1.0.0")
           .doc("host delay before each batch is handed over: a slow loader on purpose (tests)")}};
}

}  // namespace orch::plugin_schemas
