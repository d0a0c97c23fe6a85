// HTML escaping and UTF-8-aware shortening for the report.
#include "report/html_escape.h"

#include "text/terminal_text.h"

namespace orch {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        ++i;
        continue;
      case '<':
        out += "&lt;";
        ++i;
        continue;
      case '>':
        out += "&gt;";
        ++i;
        continue;
      case '"':
        out += "&quot;";
        ++i;
        continue;
      case '\'':
        out += "&#39;";
        ++i;
        continue;
      default:
        break;
    }
    if ((u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7F) {
      out += kReplacement;
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    if (n > 1) {
      // C1 controls and the invisible characters that reorder or break a line (U+202E and the
      // like) are shown as the terminal's messages show them, `\u202e`: a browser would apply
      // them to the report's title, headings and a script's stderr.
      out += terminal_text(text.substr(i, n));
      i += n;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string shorten(std::string_view text, std::size_t max_chars) {
  std::size_t chars = 0, i = 0, cut = std::string_view::npos;
  while (i < text.size()) {
    if (chars + 1 == max_chars) cut = i;  // where "…" goes if the text turns out too long
    const std::size_t n = utf8_length(text, i);
    i += n == 0 ? 1 : n;
    ++chars;
  }
  if (chars <= max_chars || max_chars == 0) return std::string(max_chars == 0 ? "" : text);
  return std::string(text.substr(0, cut)) + "\xE2\x80\xA6";
}

}  // namespace orch
