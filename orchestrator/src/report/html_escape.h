// The one escaping function of the HTML report. Every string that came from a YAML file, a
// plugin or the database goes through it before it is written into HTML text, an attribute,
// or SVG text and attributes (inline SVG is parsed by the HTML parser, so the same rules hold).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace orch {

/// `text` with & < > " ' replaced by entities, and control characters (other than tab, line
/// feed and carriage return) and invalid UTF-8 bytes replaced by U+FFFD, so the result is safe
/// in element content and in quoted attribute values alike.
std::string html_escape(std::string_view text);

/// At most `max_chars` code points of `text` (UTF-8), ending in "…" when cut. Not escaped.
std::string shorten(std::string_view text, std::size_t max_chars);

}  // namespace orch
