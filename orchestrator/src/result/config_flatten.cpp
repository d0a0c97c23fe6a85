#include "result/config_flatten.h"

#include "result/json_dump.h"

namespace orch {

void flatten_json(const nlohmann::json& value, const std::string& prefix,
                  std::map<std::string, nlohmann::json>& out) {
  if (value.is_object()) {
    // A plugin choice {plugin, params: {...}} flattens to role.plugin and role.<param>, the
    // key paths of the experiment file (precision.dtype), not role.params.<param>.
    const bool choice =
        value.contains("plugin") && value.contains("params") && value["params"].is_object();
    for (const auto& [k, v] : value.items()) {
      if (choice && k == "params")
        flatten_json(v, prefix, out);
      else
        flatten_json(v, prefix.empty() ? k : prefix + "." + k, out);
    }
  } else if (value.is_array()) {
    out[prefix] = json_dump(value);
  } else {
    out[prefix] = value;
  }
}

}  // namespace orch
