// Parsing `key=value` overrides (see overrides.h).
#include "plan/overrides.h"

#include <memory>

#include "plan/plan_error.h"

namespace orch {

Override parse_override(const std::string& text) {
  static const auto kFile = std::make_shared<const std::string>(kOverrideFile);
  Override out;
  out.text = text;
  auto eq = text.find('=');
  if (eq == std::string::npos) {
    throw PlanError(SourceMark{kFile, 1, 1}, text, "an override must look like key=value",
                    "e.g. batch_size=512, precision.dtype=bf16");
  }
  const std::string key_part = text.substr(0, eq);
  const std::size_t begin = key_part.find_first_not_of(" \t");
  if (begin == std::string::npos) {
    throw PlanError(SourceMark{kFile, 1, 1}, "", "an override needs a key before '='",
                    "e.g. batch_size=512, precision.dtype=bf16");
  }
  const std::string key = key_part.substr(begin, key_part.find_last_not_of(" \t") - begin + 1);
  const SourceMark key_at{kFile, 1, static_cast<int>(begin) + 1};
  out.path = parse_setting_path(key, key_at, key, false);
  out.value = parse_yaml(text.substr(eq + 1), kFile, YamlLimits{}, static_cast<int>(eq + 1), key);
  require_utf8(out.value, key);
  return out;
}

}  // namespace orch
