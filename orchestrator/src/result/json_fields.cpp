#include "result/json_fields.h"

#include "result/json_dump.h"

namespace orch {

std::optional<double> json_number(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (it->is_boolean()) return it->get<bool>() ? 1.0 : 0.0;
  if (!it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::optional<std::int64_t> json_integer(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (it->is_boolean()) return it->get<bool>() ? 1 : 0;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_float()) return static_cast<std::int64_t>(it->get<double>());
  return std::nullopt;
}

std::string json_text(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : json_dump(*it);
}

nlohmann::json json_object(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nlohmann::json::object();
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : nlohmann::json::object();
}

}  // namespace orch
