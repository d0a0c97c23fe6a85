// `--until HH:MM`: the next time the local clock shows HH:MM (today, or tomorrow when that time
// has passed), so `orch sweep --until 07:30` started at 19:00 means tomorrow morning.
#pragma once

#include <chrono>
#include <string>

namespace orch::sweep {

/// Throws std::invalid_argument for anything but a valid 24-hour HH:MM.
std::chrono::system_clock::time_point parse_until(const std::string& hh_mm,
                                                  std::chrono::system_clock::time_point now);

/// The wall-clock deadline as a time on the monotonic clock, taken once at the start: what the
/// scheduler compares with, so a wall-clock jump later in the night (NTP, a manual change)
/// neither defers runs that fit nor starts runs that do not.
std::chrono::steady_clock::time_point steady_deadline(
    std::chrono::system_clock::time_point deadline, std::chrono::system_clock::time_point wall_now,
    std::chrono::steady_clock::time_point steady_now);

}  // namespace orch::sweep
