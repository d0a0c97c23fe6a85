// Sweep name templates (see sweep_name.h).
#include "sweep/sweep_name.h"

#include <fmt/format.h>

#include <stdexcept>

namespace orch::sweep {

std::string expand_sweep_name(const std::string& name, const std::tm& local) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '{') {
      if (name[i] == '}') {
        throw std::invalid_argument("--sweep '" + name + "': a '}' without its '{'");
      }
      out += name[i];
      continue;
    }
    const std::size_t end = name.find('}', i);
    if (end == std::string::npos) {
      throw std::invalid_argument("--sweep '" + name + "': a '{' without its '}'");
    }
    const std::string key = name.substr(i + 1, end - i - 1);
    if (key == "date") {
      out +=
          fmt::format("{:04}-{:02}-{:02}", local.tm_year + 1900, local.tm_mon + 1, local.tm_mday);
    } else if (key == "time") {
      out += fmt::format("{:02}{:02}", local.tm_hour, local.tm_min);
    } else {
      throw std::invalid_argument("--sweep '" + name + "': unknown placeholder {" + key +
                                  "} (known: {date} = YYYY-MM-DD, {time} = HHMM, local time)");
    }
    i = end;
  }
  return out;
}

std::string expand_sweep_name_now(const std::string& name) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  return expand_sweep_name(name, local);
}

}  // namespace orch::sweep
