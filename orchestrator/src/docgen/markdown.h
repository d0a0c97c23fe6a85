// Pieces of GitHub-flavoured Markdown shared by the option and parameter tables.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace orch::docgen {

/// `text` as a code span, with enough backticks around it that a backtick inside stays literal;
/// '|' escaped, since a table cell ends at an unescaped one even inside a code span.
std::string code(std::string_view text);

/// Prose for one table cell: code spans (`...`) are kept as they are (but for '|'); outside
/// them, characters Markdown would read as markup ('<' a tag, '*' emphasis, '|' a cell break,
/// '\\') are escaped, and line breaks become spaces.
std::string cell(std::string_view text);

/// A table: the header row, the delimiter row, then one row per entry. Cells are inserted as
/// given (escape them with code() or cell() first); a row shorter than the header is padded.
std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows);

}  // namespace orch::docgen
