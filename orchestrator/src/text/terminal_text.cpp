#include "text/terminal_text.h"

#include <fmt/format.h>

#include "text/utf8.h"

namespace orch {
namespace {

/// The code point of a two- or three-byte UTF-8 sequence (already known to be one).
unsigned code_point(std::string_view u) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(u[k]); };
  if (u.size() == 2) return ((b(0) & 0x1fu) << 6) | (b(1) & 0x3fu);
  return ((b(0) & 0x0fu) << 12) | ((b(1) & 0x3fu) << 6) | (b(2) & 0x3fu);
}

/// The length of the UTF-8 sequence at `i` when it encodes a character that reorders or
/// breaks what a terminal shows without being seen: the bidirectional marks, embeddings,
/// overrides and isolates (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069; "Trojan
/// Source") and the line and paragraph separators (U+2028, U+2029); else 0.
int invisible_format_length(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) {
    return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u;
  };
  if (at(i) == 0xd8 && at(i + 1) == 0x9c) return 2;  // U+061C arabic letter mark
  if (at(i) != 0xe2) return 0;
  const unsigned b1 = at(i + 1), b2 = at(i + 2);
  if (b1 == 0x80 && (b2 == 0x8e || b2 == 0x8f || (b2 >= 0xa8 && b2 <= 0xae))) return 3;
  if (b1 == 0x81 && b2 >= 0xa6 && b2 <= 0xa9) return 3;
  return 0;
}

}  // namespace

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[++i]));
    } else if (c >= 0x80 && utf8_length(text, i) == 0) {
      // A byte no UTF-8 character holds (a Latin-1 name, a stray byte): an 8-bit terminal
      // takes 0x9b alone as CSI, the start of a control sequence.
      out += fmt::format("\\x{:02x}", c);
    } else if (const int n = invisible_format_length(text, i); n > 0) {
      out += fmt::format("\\u{:04x}", code_point(text.substr(i, static_cast<std::size_t>(n))));
      i += static_cast<std::size_t>(n) - 1;
    } else {
      // One character whole (a UTF-8 sequence's bytes are not each a character).
      const auto len = static_cast<std::size_t>(utf8_length(text, i));
      out.append(text.substr(i, len));
      i += len - 1;
    }
  }
  return out;
}

}  // namespace orch
