// plan_memory.h: what this process may still allocate, from /proc and its resource limits.
#include "plan/plan_memory.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace orch {
namespace {

/// A "Key:   123 kB" line's value in bytes from a /proc file; nullopt when absent.
std::optional<std::uint64_t> proc_kib(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() <= key.size() ||
        line[key.size()] != ':')
      continue;
    std::istringstream fields(line.substr(key.size() + 1));
    std::uint64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return std::nullopt;
}

/// The soft limit `resource` less `used`, where the limit is set and `used` is known.
std::optional<std::uint64_t> left_under(int resource, std::optional<std::uint64_t> used) {
  rlimit lim{};
  if (::getrlimit(resource, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY || !used)
    return std::nullopt;
  const auto cap = static_cast<std::uint64_t>(lim.rlim_cur);
  return cap > *used ? cap - *used : 0;
}

}  // namespace

std::optional<std::uint64_t> allocatable_bytes() {
  std::optional<std::uint64_t> least;
  for (const auto& v : {proc_kib("/proc/meminfo", "MemAvailable"),
                        left_under(RLIMIT_AS, proc_kib("/proc/self/status", "VmSize")),
                        left_under(RLIMIT_DATA, proc_kib("/proc/self/status", "VmData"))}) {
    if (v) least = least ? std::min(*least, *v) : *v;
  }
  return least;
}

std::uint64_t plan_bytes_per_run(std::uint64_t config_bytes) {
  return kPlanRunBytes + kPlanBytesPerConfigByte * config_bytes;
}

std::size_t runs_that_fit(std::uint64_t bytes, std::uint64_t bytes_per_run) {
  return static_cast<std::size_t>(bytes / 2 / std::max<std::uint64_t>(bytes_per_run, 1));
}

std::string approximate_size(std::uint64_t bytes) {
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024.0, kGiB = kMiB * 1024.0;
  const auto b = static_cast<double>(bytes);
  if (b >= kGiB) return fmt::format("about {:.1f} GiB", b / kGiB);
  if (b >= kMiB) return fmt::format("about {:.0f} MiB", b / kMiB);
  return fmt::format("about {:.0f} KiB", b / kKiB);
}

}  // namespace orch
