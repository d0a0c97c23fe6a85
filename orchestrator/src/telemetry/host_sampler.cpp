// The host sampling thread and its document section (see host_sampler.h).
#include "telemetry/host_sampler.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "result/core_metrics.h"

namespace orch {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// As the NVML sampler: ~7 minutes at 100 ms before the vector grows.
constexpr std::size_t kReservedSamples = 4096;

// The whole of a small /proc file; nullopt when it cannot be opened. /proc files report size
// 0, so they are read as a stream, not by their size.
std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// Mean and maximum of one quantity over the window's samples.
struct Stat {
  double sum = 0, max = 0, min = 0;
  std::int64_t n = 0;
  void add(double v) {
    max = n == 0 ? v : std::max(max, v);
    min = n == 0 ? v : std::min(min, v);
    sum += v;
    ++n;
  }
  double mean() const { return sum / static_cast<double>(n); }
};

}  // namespace

HostTelemetryRecord HostTelemetryRecord::unavailable(std::string why, int interval_ms) {
  HostTelemetryRecord r;
  r.reason = std::move(why);
  r.interval_ms = interval_ms;
  return r;
}

std::string default_proc_root() {
  const char* root = std::getenv("ORCH_PROC_ROOT");
  return root && *root ? root : "/proc";
}

HostProbe::HostProbe(std::string proc_root) : root_(std::move(proc_root)) {
  const std::string path = root_ + "/stat";
  const auto text = slurp(path);
  if (!text) {
    reason_ = "cannot read " + path;
    return;
  }
  previous_ = parse_proc_stat(*text);
  if (!previous_) reason_ = path + " has no 'cpu' line";
  if (const auto mem = slurp(root_ + "/meminfo")) mem_total_ = parse_meminfo(*mem).total_bytes;
}

void HostProbe::note_missing(const char* field, const std::string& why) {
  missing_.emplace(field, why);  // the first reason is kept
}

HostSample HostProbe::read(double t_s) {
  HostSample s;
  s.t_s = t_s;
  const std::string stat_path = root_ + "/stat";
  const auto stat_text = slurp(stat_path);
  const auto stat = stat_text ? parse_proc_stat(*stat_text) : std::nullopt;
  if (!stat) {
    note_missing("cpu_util_pct", "cannot read " + stat_path);
  } else if (previous_) {
    s.cpu_util_pct = busy_pct(previous_->all, stat->all);
    if (!s.cpu_util_pct) note_missing("cpu_util_pct", "no CPU time passed between two readings");
    const std::size_t n = std::min(previous_->cores.size(), stat->cores.size());
    s.core_pct.assign(stat->cores.size(), -1.0);
    for (std::size_t i = 0; i < n; ++i) {
      // A core that had no line before (offline) counts from boot now: no share this time.
      if (previous_->cores[i].total == 0) continue;
      const auto pct = busy_pct(previous_->cores[i], stat->cores[i]);
      if (!pct) continue;  // offline, or no tick on this core
      s.core_pct[i] = *pct;
      if (!s.busiest_core_pct || *pct > *s.busiest_core_pct) {
        s.busiest_core_pct = *pct;
        s.busiest_core = static_cast<int>(i);
      }
    }
  }
  if (stat) previous_ = stat;

  const std::string load_path = root_ + "/loadavg";
  const auto load_text = slurp(load_path);
  if (load_text) s.load1 = parse_loadavg(*load_text);
  if (!s.load1) note_missing("load1", "cannot read a load from " + load_path);

  const std::string mem_path = root_ + "/meminfo";
  const auto mem_text = slurp(mem_path);
  if (mem_text) s.mem_available_bytes = parse_meminfo(*mem_text).available_bytes;
  if (!s.mem_available_bytes) {
    // MemAvailable came with Linux 3.14; older kernels have no estimate to give.
    note_missing("mem_available_bytes", "no MemAvailable in " + mem_path);
  }
  return s;
}

HostSampler::HostSampler(HostSamplerOptions options)
    : options_(std::move(options)), probe_(options_.proc_root) {
  if (options_.interval_ms < 1) options_.interval_ms = 1;
  if (probe_.first()) cores_ = probe_.first()->cores_counted;
}

HostSampler::~HostSampler() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
}

std::int64_t HostSampler::ns_since_start() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
}

void HostSampler::start() {
  start_ = Clock::now();
  if (!available() || thread_.joinable()) return;
  samples_.reserve(kReservedSamples);
  thread_ = std::thread([this] { run(); });
}

void HostSampler::mark_measure_begin() {
  measure_begin_ns_.store(ns_since_start(), std::memory_order_relaxed);
}

void HostSampler::mark_measure_end() {
  measure_end_ns_.store(ns_since_start(), std::memory_order_relaxed);
}

void HostSampler::run() {
  const auto interval = std::chrono::milliseconds(options_.interval_ms);
  auto next = start_;
  while (true) {
    samples_.push_back(probe_.read(static_cast<double>(ns_since_start()) / 1e9));
    // On the grid start + k * interval, as the NVML sampler, so the two timelines line up.
    const auto now = Clock::now();
    do next += interval;
    while (next <= now);
    std::unique_lock lock(mutex_);
    if (wake_.wait_until(lock, next, [this] { return stop_; })) return;
  }
}

HostTelemetryRecord HostSampler::stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  if (!available())
    return HostTelemetryRecord::unavailable(unavailable_reason(), options_.interval_ms);
  HostTelemetryRecord r;
  r.available = true;
  r.interval_ms = options_.interval_ms;
  r.cores = cores_;
  r.mem_total_bytes = probe_.mem_total_bytes();
  const auto b = measure_begin_ns_.load(), e = measure_end_ns_.load();
  if (b >= 0 && e >= b) r.measure_window_s = std::pair{b / 1e9, e / 1e9};
  r.samples = std::move(samples_);
  r.missing = probe_.missing();
  return r;
}

json host_telemetry_json(const HostTelemetryRecord& record) {
  json out;
  out["available"] = record.available;
  out["reason"] = record.reason.empty() ? json(nullptr) : json(record.reason);
  out["source"] = "procfs";
  out["interval_ms"] = record.interval_ms;
  if (record.measure_window_s) {
    out["measure_window_s"] = {record.measure_window_s->first, record.measure_window_s->second};
  } else {
    out["measure_window_s"] = nullptr;
  }
  out["cores"] = record.cores;
  out["mem_total_bytes"] = or_null(record.mem_total_bytes);
  json samples = json::array();
  for (const HostSample& s : record.samples) {
    samples.push_back({{"t_s", s.t_s},
                       {"cpu_util_pct", or_null(s.cpu_util_pct)},
                       {"busiest_core_pct", or_null(s.busiest_core_pct)},
                       {"busiest_core", or_null(s.busiest_core)},
                       {"load1", or_null(s.load1)},
                       {"mem_available_bytes", or_null(s.mem_available_bytes)}});
  }
  out["samples"] = std::move(samples);
  json missing = json::object();
  for (const auto& [field, why] : record.missing) missing[field] = why;
  out["missing"] = std::move(missing);
  return out;
}

json host_telemetry_metrics(const HostTelemetryRecord& record) {
  json out = json::object();
  if (!record.available || !record.measure_window_s) return out;
  const auto [t0, t1] = *record.measure_window_s;
  Stat util, load, mem;
  std::vector<Stat> cores;
  std::int64_t in_window = 0;
  for (const HostSample& s : record.samples) {
    if (s.t_s < t0 || s.t_s > t1) continue;
    ++in_window;
    if (s.cpu_util_pct) util.add(*s.cpu_util_pct);
    if (s.load1) load.add(*s.load1);
    if (s.mem_available_bytes) mem.add(static_cast<double>(*s.mem_available_bytes));
    if (cores.size() < s.core_pct.size()) cores.resize(s.core_pct.size());
    for (std::size_t i = 0; i < s.core_pct.size(); ++i) {
      if (s.core_pct[i] >= 0) cores[i].add(s.core_pct[i]);
    }
  }
  if (util.n > 0) {
    out[metric_key::kHostCpuUtilMeanPct] = util.mean();
    out["host_cpu_util_max_pct"] = util.max;
  }
  // Per core first, then the busiest: a loader thread the scheduler moves between cores
  // spreads its load and reads lower here, but a pinned or long-lived one shows as ~100%.
  std::optional<double> busiest;
  for (const Stat& c : cores) {
    if (c.n > 0 && (!busiest || c.mean() > *busiest)) busiest = c.mean();
  }
  if (busiest) out[metric_key::kHostCpuBusiestCoreMeanPct] = *busiest;
  if (load.n > 0) {
    out["host_load1_mean"] = load.mean();
    out["host_load1_max"] = load.max;
  }
  if (mem.n > 0) out["host_mem_available_min_bytes"] = static_cast<std::int64_t>(mem.min);
  out[metric_key::kHostCpuCores] = record.cores;
  out["host_telemetry_samples"] = in_window;
  return out;
}

}  // namespace orch
