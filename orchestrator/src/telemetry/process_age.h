// How long this process has existed, for a run's start-up phase (result/run_phases.h): the
// kernel's record of when the process started counts exec and the dynamic loader mapping
// LibTorch and CUDA, which a clock started in main() would miss.
#pragma once

#include <optional>
#include <string>

namespace orch {

/// Seconds since the process started: /proc/self/stat's start time (clock ticks after boot)
/// against CLOCK_BOOTTIME. nullopt where /proc is not mounted or unreadable.
std::optional<double> process_age_s();

/// The start time field (22nd, in clock ticks after boot) of a /proc/PID/stat line; nullopt
/// when the line is not one. The command name (2nd, in parentheses) may hold spaces and ')'.
std::optional<unsigned long long> stat_start_ticks(const std::string& stat_line);

}  // namespace orch
