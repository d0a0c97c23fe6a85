// config_text.h: a configuration as shared canonical text.
#include "plan/config_text.h"

#include "result/json_dump.h"

namespace orch {

namespace {

// The dump grows its string by doubling: a plan keeps one text per configuration, so the text
// is kept at its length, not at the capacity it grew to (up to twice as much). The planner
// refuses text that is not UTF-8 in a configuration, but a configuration read back from a result
// document or a submission folder is not the planner's: json_dump keeps that from throwing.
std::shared_ptr<const std::string> exact_text(const nlohmann::json& config) {
  std::string text = json_dump(config);
  text.shrink_to_fit();
  return std::make_shared<const std::string>(std::move(text));
}

}  // namespace

ConfigText::ConfigText(const nlohmann::json& config)
    : text_(config.is_null() ? nullptr : exact_text(config)) {}

const std::string& ConfigText::text() const {
  static const std::string kNull = "null";
  return text_ ? *text_ : kNull;
}

nlohmann::json ConfigText::json() const {
  return text_ ? nlohmann::json::parse(*text_) : nlohmann::json();
}

}  // namespace orch
