// Run name construction (see run_name.h).
#include "plan/run_name.h"

#include <cctype>
#include <map>
#include <set>

namespace orch {

bool self_explanatory(const std::string& value) {
  static const std::set<std::string> kAmbiguous = {
      "on", "off", "auto", "true", "false", "yes", "no", "none", "null", "default", "defaults"};
  if (value.empty() || !std::isalpha(static_cast<unsigned char>(value[0]))) return false;
  std::string lower;
  for (char c : value) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return kAmbiguous.count(lower) == 0;
}

std::string name_part(const NameColumn& column, const std::string& value) {
  std::string part;
  switch (column.style) {
    case NameStyle::kValue:
      part = value;
      break;
    case NameStyle::kPrefix:
      part = column.prefix + value;
      break;
    case NameStyle::kLeaf: {
      if (self_explanatory(value)) {
        part = value;
      } else {
        auto dot = column.path.rfind('.');
        part = (dot == std::string::npos ? column.path : column.path.substr(dot + 1)) + "=" + value;
      }
      break;
    }
  }
  // '/' separates parts; keep names safe as file names and shell words.
  for (char& c : part) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ',' ||
              c == '=' || c == ':' || c == '+' || c == '-';
    if (!ok) c = '_';
  }
  return part;
}

std::vector<std::string> make_run_names(const std::vector<NameColumn>& columns,
                                        const std::vector<std::vector<std::string>>& values,
                                        const std::string& fallback) {
  std::vector<bool> varies(columns.size(), false);
  for (std::size_t j = 0; j < columns.size(); ++j) {
    for (std::size_t i = 1; i < values.size(); ++i) {
      if (values[i][j] != values[0][j]) varies[j] = true;
    }
  }
  std::vector<std::string> names;
  std::map<std::string, int> seen;
  for (const std::vector<std::string>& row : values) {
    std::string name;
    for (std::size_t j = 0; j < columns.size(); ++j) {
      if (!varies[j]) continue;
      if (!name.empty()) name += "/";
      name += name_part(columns[j], row[j]);
    }
    if (name.empty()) name = fallback;
    int n = ++seen[name];
    if (n > 1) {
      std::string candidate;
      do {
        candidate = name + "~" + std::to_string(n++);
      } while (seen.count(candidate));
      seen[candidate] = 1;
      name = candidate;
    }
    names.push_back(name);
  }
  return names;
}

}  // namespace orch
