#include "docgen/markdown.h"

#include <algorithm>

namespace orch::docgen {
namespace {

// Outside code spans; '_' is left alone, since GitHub does not read it as emphasis inside a word
// (batch_size), and help texts use it no other way.
void append_escaped(std::string& out, char c) {
  switch (c) {
    case '<':
      out += "&lt;";
      return;
    case '>':
      out += "&gt;";
      return;
    case '|':
    case '*':
    case '\\':
      out += '\\';
      out += c;
      return;
    case '\n':
    case '\r':
    case '\t':
      out += ' ';
      return;
    default:
      out += c;
  }
}

std::string row(const std::vector<std::string>& cells, std::size_t width) {
  std::string out = "|";
  for (std::size_t i = 0; i < width; ++i) {
    const std::string& c = i < cells.size() ? cells[i] : std::string();
    out += c.empty() ? " |" : " " + c + " |";
  }
  return out + "\n";
}

}  // namespace

std::string code(std::string_view text) {
  std::size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  // A span that starts or ends with a backtick needs a space to keep it apart from the fence.
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
  std::string out = fence + (pad ? " " : "");
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out + (pad ? " " : "") + fence;
}

std::string cell(std::string_view text) {
  std::string out;
  bool in_code = false;
  for (char c : text) {
    if (c == '`') {
      in_code = !in_code;
      out += c;
    } else if (in_code) {
      out += c == '|' ? std::string("\\|") : std::string(1, c == '\n' ? ' ' : c);
    } else {
      append_escaped(out, c);
    }
  }
  return out;
}

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::string out = row(header, header.size()) + "|";
  for (std::size_t i = 0; i < header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& r : rows) out += row(r, header.size());
  return out;
}

}  // namespace orch::docgen
