// Host facts (see host_facts.h).
#include "telemetry/host_facts.h"

#include <sys/resource.h>

#include <fstream>

namespace orch {

std::string cpu_model_from(const std::string& cpuinfo_path) {
  std::ifstream in(cpuinfo_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

std::string cpu_model() { return cpu_model_from("/proc/cpuinfo"); }

std::int64_t host_peak_rss_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
}

}  // namespace orch
