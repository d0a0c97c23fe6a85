// Parsing of /proc/stat, /proc/loadavg and /proc/meminfo (see host_stat.h).
#include "telemetry/host_stat.h"

#include <cctype>
#include <sstream>

namespace orch {

namespace {

// The counters of one `cpu` or `cpuN` line after its name: user nice system idle iowait irq
// softirq steal guest guest_nice. Kernels before 2.6.11 stop after iowait or earlier; the
// missing ones are zero.
std::optional<CpuTimes> cpu_times(std::istringstream& fields) {
  std::uint64_t v[8] = {};
  int n = 0;
  while (n < 8 && (fields >> v[n])) ++n;
  if (n < 4) return std::nullopt;
  const std::uint64_t user = v[0], nice = v[1], system = v[2], idle = v[3], iowait = v[4],
                      irq = v[5], softirq = v[6], steal = v[7];
  CpuTimes t;
  t.busy = user + nice + system + irq + softirq + steal;
  t.total = t.busy + idle + iowait;
  return t;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(const std::string& text) {
  ProcStat out;
  bool have_all = false;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu", 0) != 0) continue;
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    const auto times = cpu_times(fields);
    if (!times) continue;
    if (name == "cpu") {
      out.all = *times;
      have_all = true;
      continue;
    }
    const std::string digits = name.substr(3);
    if (digits.empty() || digits.size() > 6) continue;
    bool numeric = true;
    for (char c : digits) numeric = numeric && std::isdigit(static_cast<unsigned char>(c));
    if (!numeric) continue;
    const auto index = static_cast<std::size_t>(std::stoul(digits));
    if (out.cores.size() <= index) out.cores.resize(index + 1);
    out.cores[index] = *times;
    ++out.cores_counted;
  }
  if (!have_all) return std::nullopt;
  return out;
}

std::optional<double> busy_pct(const CpuTimes& before, const CpuTimes& after) {
  if (after.total <= before.total || after.busy < before.busy) return std::nullopt;
  const auto total = after.total - before.total;
  const auto busy = after.busy - before.busy;
  if (busy > total) return std::nullopt;
  return 100.0 * static_cast<double>(busy) / static_cast<double>(total);
}

std::optional<double> parse_loadavg(const std::string& text) {
  std::istringstream in(text);
  double load = 0;
  if (!(in >> load) || load < 0) return std::nullopt;
  return load;
}

MemInfo parse_meminfo(const std::string& text) {
  MemInfo out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string key, unit;
    std::int64_t value = 0;
    if (!(fields >> key >> value) || value < 0) continue;
    fields >> unit;
    const std::int64_t scale = unit == "kB" ? 1024 : 1;
    if (key == "MemTotal:") out.total_bytes = value * scale;
    if (key == "MemAvailable:") out.available_bytes = value * scale;
  }
  return out;
}

}  // namespace orch
