// json_dump.h: JSON text that never throws on text that is not UTF-8.
#include "result/json_dump.h"

#include <stdexcept>

#include "text/utf8.h"

namespace orch {

std::string json_dump(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const int n = utf8_length(text, i);
    if (n == 0) return false;
    i += static_cast<std::size_t>(n);
  }
  return true;
}

nlohmann::json lossless_text(std::string_view text) {
  if (is_utf8(text)) return std::string(text);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(text.size() * 2);
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    hex += kHex[b >> 4];
    hex += kHex[b & 0xf];
  }
  return {{"bytes_hex", hex}};
}

std::string lossless_text_from(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (j.is_object() && j.size() == 1 && j.contains("bytes_hex") && j["bytes_hex"].is_string()) {
    const std::string& hex = j["bytes_hex"].get_ref<const std::string&>();
    std::string bytes;
    bool ok = hex.size() % 2 == 0;
    for (std::size_t i = 0; ok && i < hex.size(); i += 2) {
      const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
      ok = hi >= 0 && lo >= 0;
      bytes += static_cast<char>((hi << 4) | lo);
    }
    if (ok) return bytes;
  }
  throw std::invalid_argument("not text as lossless_text writes it: " + json_dump(j));
}

}  // namespace orch
