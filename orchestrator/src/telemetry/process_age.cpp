#include "telemetry/process_age.h"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

namespace orch {

std::optional<unsigned long long> stat_start_ticks(const std::string& stat_line) {
  // The command name ends at the last ')'; fields 3 onwards follow, space-separated.
  const auto close = stat_line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat_line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  try {
    std::size_t used = 0;
    const unsigned long long ticks = std::stoull(field, &used);
    if (used != field.size()) return std::nullopt;
    return ticks;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<double> process_age_s() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  const auto ticks = stat_start_ticks(line);
  const long hz = ::sysconf(_SC_CLK_TCK);
  timespec now{};
  if (!ticks || hz <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &now) != 0) return std::nullopt;
  const double age = static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9 -
                     static_cast<double>(*ticks) / static_cast<double>(hz);
  return age >= 0 ? std::optional<double>(age) : std::nullopt;
}

}  // namespace orch
