// Readable run names (see readable_name.h).
#include "plan/readable_name.h"

#include <cctype>
#include <map>
#include <set>

namespace orch {
namespace {

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::string item;
  for (char c : path) {
    if (c == '/') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

std::string tail(const std::vector<std::string>& parts, std::size_t k) {
  std::string out;
  for (std::size_t i = parts.size() > k ? parts.size() - k : 0; i < parts.size(); ++i) {
    out += (out.empty() ? "" : "/") + parts[i];
  }
  return out;
}

bool is_path(const std::optional<std::string>& v) { return v && v->find('/') != std::string::npos; }

using Rows = std::vector<std::vector<std::optional<std::string>>>;

// Which pieces differ between configurations, and so are shown.
std::vector<bool> varying_pieces(const std::vector<NamePiece>& pieces, const Rows& values) {
  std::vector<bool> varies(pieces.size(), false);
  for (std::size_t j = 0; j < pieces.size(); ++j) {
    std::set<std::string> present;
    bool absent = false;
    for (const auto& row : values) {
      if (row[j])
        present.insert(*row[j]);
      else
        absent = true;
    }
    varies[j] = present.size() > 1 || (absent && !present.empty());
  }
  for (std::size_t j = 0; j < pieces.size(); ++j) {
    if (!varies[j] || pieces[j].parent < 0) continue;
    std::set<std::string> present;
    for (const auto& row : values) {
      if (row[j]) present.insert(*row[j]);
    }
    // Present with one value, absent elsewhere: only a different plugin lacks it.
    if (present.size() <= 1 && varies[static_cast<std::size_t>(pieces[j].parent)]) {
      varies[j] = false;
    }
  }
  return varies;
}

// Paths: each varying piece's values shortened together, so they stay distinct.
Rows shorten_paths(const Rows& values, const std::vector<bool>& varies) {
  Rows shown = values;
  for (std::size_t j = 0; j < varies.size(); ++j) {
    if (!varies[j]) continue;
    std::vector<std::string> paths;
    for (const auto& row : values) {
      if (is_path(row[j])) paths.push_back(*row[j]);
    }
    if (paths.empty()) continue;
    const std::vector<std::string> tails = distinguishing_tails(paths);
    std::size_t k = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (is_path(values[i][j])) shown[i][j] = tails[k++];
    }
  }
  return shown;
}

// The piece's text in a name; a false flag shows nothing there, but is noted in `off`.
std::string piece_text(const NamePiece& p, const std::string& v, std::string& off) {
  switch (p.style) {
    case PieceStyle::kValue:
      return name_safe(v);
    case PieceStyle::kPrefix:
      return name_safe(p.prefix + v);
    case PieceStyle::kLeaf:
      return self_explanatory(v) ? name_safe(v) : name_safe(p.key + "=" + v);
    case PieceStyle::kSetting:
      return name_safe(p.key + "=" + v);
    case PieceStyle::kFlag:
      if (v == "true") return name_safe(p.key);
      off += (off.empty() ? "no-" : ",no-") + name_safe(p.key);
      return "";
  }
  return "";
}

std::string compose_name(const std::vector<NamePiece>& pieces, const std::vector<bool>& varies,
                         const std::vector<std::optional<std::string>>& row,
                         const std::string& fallback) {
  std::string name, off;
  std::size_t part = 0;
  bool part_open = false;
  for (std::size_t j = 0; j < pieces.size(); ++j) {
    if (!varies[j] || !row[j]) continue;
    const NamePiece& p = pieces[j];
    const std::string text = piece_text(p, *row[j], off);
    if (text.empty()) continue;
    if (part_open && p.part == part) {
      name += p.joiner;
    } else if (!name.empty()) {
      name += '/';
    }
    name += text;
    part = p.part;
    part_open = true;
  }
  if (name.empty()) name = off.empty() ? fallback : off;
  return name;
}

// `name`, or the first of name~2, name~3, ... not yet in `seen`; records what it returns.
std::string unique_name(const std::string& name, std::map<std::string, int>& seen) {
  int count = ++seen[name];
  if (count == 1) return name;
  std::string candidate;
  do {
    candidate = name + "~" + std::to_string(count++);
  } while (seen.count(candidate));
  seen[candidate] = 1;
  return candidate;
}

}  // namespace

bool self_explanatory(const std::string& value) {
  static const std::set<std::string> kAmbiguous = {
      "on", "off", "auto", "true", "false", "yes", "no", "none", "null", "default", "defaults"};
  if (value.empty() || !std::isalpha(static_cast<unsigned char>(value[0]))) return false;
  std::string lower;
  for (char c : value) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return kAmbiguous.count(lower) == 0;
}

std::string name_safe(std::string text) {
  for (char& c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
                    c == ',' || c == '=' || c == ':' || c == '+' || c == '-';
    if (!ok) c = '_';
  }
  return text;
}

std::vector<std::string> distinguishing_tails(const std::vector<std::string>& paths) {
  std::vector<std::vector<std::string>> split;
  std::size_t longest = 1;
  for (const std::string& p : paths) {
    split.push_back(components(p));
    longest = std::max(longest, split.back().size());
  }
  const std::set<std::string> distinct(paths.begin(), paths.end());
  for (std::size_t k = 1;; ++k) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const auto& parts : split) {
      out.push_back(tail(parts, k));
      seen.insert(out.back());
    }
    if (seen.size() == distinct.size() || k >= longest) return out;
  }
}

std::vector<std::string> make_readable_names(
    const std::vector<NamePiece>& pieces,
    const std::vector<std::vector<std::optional<std::string>>>& values,
    const std::string& fallback) {
  const std::vector<bool> varies = varying_pieces(pieces, values);
  const Rows shown = shorten_paths(values, varies);
  std::vector<std::string> names;
  std::map<std::string, int> seen;
  for (const auto& row : shown) {
    names.push_back(unique_name(compose_name(pieces, varies, row, fallback), seen));
  }
  return names;
}

}  // namespace orch
