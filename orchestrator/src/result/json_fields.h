// Lenient readers of JSON fields: a missing, null or ill-typed field reads as absent, never as
// an error, since result documents come from other programs and other versions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace orch {

/// Numbers as they are, booleans as 1 or 0.
std::optional<double> json_number(const nlohmann::json& obj, const char* key);
/// Integers as they are, floats truncated, booleans as 1 or 0.
std::optional<std::int64_t> json_integer(const nlohmann::json& obj, const char* key);
/// Strings as they are, other scalars as their JSON text, absent as "".
std::string json_text(const nlohmann::json& obj, const char* key);
/// The object at `key`, or an empty object.
nlohmann::json json_object(const nlohmann::json& obj, const char* key);

}  // namespace orch
