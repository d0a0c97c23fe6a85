// The one escaping function of the HTML report. Every string that came from a YAML file, a
// plugin or the database goes through it before it is written into HTML text, an attribute,
// or SVG text and attributes (inline SVG is parsed by the HTML parser, so the same rules hold).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace orch {

/// `text` with & < > " ' replaced by entities, C0 control characters (other than tab, line
/// feed and carriage return), DEL and invalid UTF-8 bytes replaced by U+FFFD, and C1 controls
/// and the bidirectional and line-breaking format characters written out visibly as
/// terminal_text writes them (`\u202e`), so the result is safe in element content and in quoted
/// attribute values alike, and reads in the order it was written.
std::string html_escape(std::string_view text);

/// At most `max_chars` code points of `text` (UTF-8), ending in "…" when cut. Not escaped.
std::string shorten(std::string_view text, std::size_t max_chars);

}  // namespace orch
