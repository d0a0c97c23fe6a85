// The host's /proc files, parsed: CPU time counters (/proc/stat), the 1-minute load
// (/proc/loadavg) and memory (/proc/meminfo), and the busy share between two CPU snapshots.
// Pure functions over text, so tests feed known snapshots and check the shares exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace orch {

/// One `cpu` line of /proc/stat, in USER_HZ ticks since boot.
struct CpuTimes {
  /// user + nice + system + irq + softirq + steal: time the CPU was not available to more
  /// work. guest and guest_nice are already inside user and nice (the kernel adds them to
  /// both), so they are not counted again.
  std::uint64_t busy = 0;
  /// busy + idle + iowait: all the time the counters cover.
  std::uint64_t total = 0;
};

struct ProcStat {
  CpuTimes all;  ///< the `cpu` line: every core together
  /// The `cpuN` lines by N; a core that is offline has no line and keeps total = 0.
  std::vector<CpuTimes> cores;
  int cores_counted = 0;  ///< how many `cpuN` lines there were
};

/// Parses /proc/stat's text; nullopt when it has no `cpu` line with at least four counters.
std::optional<ProcStat> parse_proc_stat(const std::string& text);

/// The busy share in percent between two snapshots of one counter line: the busy ticks'
/// delta over the total ticks' delta. nullopt when no tick passed, or a counter went
/// backwards (a core taken offline and back resets its line).
std::optional<double> busy_pct(const CpuTimes& before, const CpuTimes& after);

/// The first field of /proc/loadavg (the 1-minute load average); nullopt when unreadable.
std::optional<double> parse_loadavg(const std::string& text);

struct MemInfo {
  std::optional<std::int64_t> total_bytes, available_bytes;
};

/// MemTotal and MemAvailable of /proc/meminfo (the kernel writes kB, meaning KiB).
MemInfo parse_meminfo(const std::string& text);

}  // namespace orch
