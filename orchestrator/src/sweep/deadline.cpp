#include "sweep/deadline.h"

#include <ctime>
#include <regex>
#include <stdexcept>

namespace orch::sweep {

std::chrono::system_clock::time_point parse_until(const std::string& text,
                                                  std::chrono::system_clock::time_point now) {
  static const std::regex re(R"(^([01]?[0-9]|2[0-3]):([0-5][0-9])$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) {
    throw std::invalid_argument("--until: '" + text +
                                "' is not a time of day (expected HH:MM, 00:00-23:59)");
  }
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm local{};
  localtime_r(&t, &local);
  local.tm_hour = std::stoi(m[1]);
  local.tm_min = std::stoi(m[2]);
  local.tm_sec = 0;
  local.tm_isdst = -1;  // let mktime decide (a deadline across a DST change stays wall-clock)
  auto deadline = std::chrono::system_clock::from_time_t(std::mktime(&local));
  if (deadline <= now) {
    local.tm_mday += 1;
    local.tm_isdst = -1;
    deadline = std::chrono::system_clock::from_time_t(std::mktime(&local));
  }
  return deadline;
}

std::chrono::steady_clock::time_point steady_deadline(
    std::chrono::system_clock::time_point deadline, std::chrono::system_clock::time_point wall_now,
    std::chrono::steady_clock::time_point steady_now) {
  return steady_now +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline - wall_now);
}

}  // namespace orch::sweep
