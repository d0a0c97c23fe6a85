// Small checks over generated HTML for the report tests: the <svg> blocks, whether their
// markup is balanced XML (tags nested and closed, attributes quoted, entities well formed),
// and every external reference a page could make (src=, href=, url(, @import).
#pragma once

#include <regex>
#include <string>
#include <vector>

namespace orch::test {

/// Each <svg ...>...</svg> block, in order.
inline std::vector<std::string> svg_blocks(const std::string& html) {
  std::vector<std::string> out;
  for (std::size_t p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1)) {
    const auto end = html.find("</svg>", p);
    if (end == std::string::npos) break;
    out.push_back(html.substr(p, end + 6 - p));
  }
  return out;
}

/// "" when `xml` is balanced, else what is wrong first.
inline std::string xml_problem(const std::string& xml) {
  std::vector<std::string> stack;
  const std::regex entity("^&(amp|lt|gt|quot|#39|#[0-9]+|#x[0-9a-fA-F]+);");
  for (std::size_t i = 0; i < xml.size();) {
    const char c = xml[i];
    if (c == '&') {
      std::smatch m;
      const std::string rest = xml.substr(i, 12);
      if (!std::regex_search(rest, m, entity))
        return "bad entity at " + std::to_string(i) + ": " + rest;
      i += m.length(0);
      continue;
    }
    if (c == '>') return "stray '>' at " + std::to_string(i);
    if (c != '<') {
      ++i;
      continue;
    }
    // A tag: read to its '>' outside quotes.
    std::size_t j = i + 1;
    char quote = 0;
    for (; j < xml.size(); ++j) {
      if (quote) {
        if (xml[j] == quote)
          quote = 0;
        else if (xml[j] == '<')
          return "'<' inside an attribute at " + std::to_string(j);
      } else if (xml[j] == '"' || xml[j] == '\'') {
        quote = xml[j];
      } else if (xml[j] == '>') {
        break;
      } else if (xml[j] == '<') {
        return "'<' inside a tag at " + std::to_string(j);
      }
    }
    if (j >= xml.size()) return "unterminated tag at " + std::to_string(i);
    std::string tag = xml.substr(i + 1, j - i - 1);
    i = j + 1;
    const bool closing = !tag.empty() && tag[0] == '/';
    const bool self = !tag.empty() && tag.back() == '/';
    std::smatch m;
    const std::string body = closing ? tag.substr(1) : tag;
    if (!std::regex_search(body, m, std::regex("^[a-zA-Z][a-zA-Z0-9:-]*")))
      return "bad tag <" + tag + ">";
    const std::string name = m.str(0);
    if (!closing) {
      // Attributes: name="value" pairs only.
      std::string attrs = body.substr(name.size());
      if (self) attrs.pop_back();
      const std::regex attr_re(R"re(^\s+[a-zA-Z][a-zA-Z0-9:-]*="[^"<]*")re");
      while (!attrs.empty() && attrs.find_first_not_of(" \t\n") != std::string::npos) {
        std::smatch a;
        if (!std::regex_search(attrs, a, attr_re)) return "bad attributes in <" + tag + ">";
        attrs = attrs.substr(a.length(0));
      }
    }
    if (closing) {
      if (stack.empty() || stack.back() != name) {
        return "</" + name + "> closes <" +
               (stack.empty() ? std::string("nothing") : stack.back()) + ">";
      }
      stack.pop_back();
    } else if (!self) {
      stack.push_back(name);
    }
  }
  if (!stack.empty()) return "<" + stack.back() + "> never closed";
  return "";
}

/// Every reference to something outside the file: src= / href= values other than "#..." and
/// "data:", url(...) other than "#..." and "data:", and @import.
inline std::vector<std::string> external_references(const std::string& html) {
  std::vector<std::string> out;
  const std::regex attr(
      R"re(\b(src|href|xlink:href|srcset|action|poster|data)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+))re",
      std::regex::icase);
  // Attributes only inside real tags: escaped text ("&lt;img src=x&gt;") is not markup.
  const std::regex tag(R"re(<[a-zA-Z][^>]*>)re");
  for (auto t = std::sregex_iterator(html.begin(), html.end(), tag); t != std::sregex_iterator();
       ++t) {
    const std::string text = t->str();
    for (auto it = std::sregex_iterator(text.begin(), text.end(), attr);
         it != std::sregex_iterator(); ++it) {
      std::string v = (*it)[2].str();
      if (!v.empty() && (v[0] == '"' || v[0] == '\'')) v = v.substr(1, v.size() - 2);
      if (v.rfind("#", 0) == 0 || v.rfind("data:", 0) == 0) continue;
      out.push_back(it->str());
    }
  }
  const std::regex url(R"re(url\(\s*['"]?([^'")]*))re", std::regex::icase);
  for (auto it = std::sregex_iterator(html.begin(), html.end(), url); it != std::sregex_iterator();
       ++it) {
    const std::string v = (*it)[1].str();
    if (v.rfind("#", 0) == 0 || v.rfind("data:", 0) == 0) continue;
    out.push_back(it->str());
  }
  const std::regex import("@import", std::regex::icase);
  for (auto it = std::sregex_iterator(html.begin(), html.end(), import);
       it != std::sregex_iterator(); ++it) {
    out.push_back(it->str());
  }
  return out;
}

}  // namespace orch::test
