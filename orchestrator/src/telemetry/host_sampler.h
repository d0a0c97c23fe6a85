// HostSampler: a background thread that samples the host's CPU utilisation (all cores and per
// core), 1-minute load and available memory from /proc while a run trains, beside the NVML
// sampler and at its cadence. An input-bound GPU is half the story; the other half is whether
// the host had CPU to spare (all cores busy: the loader needs more CPU than there is; one core
// pegged: a single-threaded loader or launch thread).
//
// Like the NVML sampler it never hurts the run: an unreadable /proc makes it unavailable with
// a reason, a file that fails later leaves that field null in that sample, and the training
// thread only ever touches two atomics. No LibTorch, no CUDA.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "telemetry/host_stat.h"

namespace orch {

/// One reading of the host. The CPU shares cover the time since the previous reading, so the
/// first reading has none.
struct HostSample {
  double t_s = 0;
  std::optional<double> cpu_util_pct;      ///< every core together
  std::optional<double> busiest_core_pct;  ///< the busiest single core in the interval
  std::optional<int> busiest_core;         ///< its number (cpuN)
  std::optional<double> load1;             ///< /proc/loadavg's 1-minute load
  std::optional<std::int64_t> mem_available_bytes;
  /// Each core's share in the interval, by core number; negative where unknown (offline). Kept
  /// in memory for the per-core summary, not written to the document (it grows with cores).
  std::vector<double> core_pct;
};

struct HostTelemetryRecord {
  bool available = false;
  std::string reason;  ///< why not available (empty when available)
  int interval_ms = 100;
  /// Seconds since the sampler started when the measured steps began and ended.
  std::optional<std::pair<double, double>> measure_window_s;
  int cores = 0;  ///< `cpuN` lines of /proc/stat at the start: the cores the kernel runs on
  std::optional<std::int64_t> mem_total_bytes;
  std::vector<HostSample> samples;
  /// Field name -> why it was null in at least one sample (the first reason seen).
  std::map<std::string, std::string> missing;

  static HostTelemetryRecord unavailable(std::string why, int interval_ms);
};

/// Reads the host's /proc files under a root ("/proc", or a test's folder of snapshots), each
/// reading against the previous one.
class HostProbe {
 public:
  explicit HostProbe(std::string proc_root);
  /// Reads stat, loadavg and meminfo now; t_s is stored as the sample's time.
  HostSample read(double t_s);
  /// The first /proc/stat, read by the constructor; nullopt (and why) when unreadable.
  const std::optional<ProcStat>& first() const { return previous_; }
  const std::string& unreadable_reason() const { return reason_; }
  std::optional<std::int64_t> mem_total_bytes() const { return mem_total_; }
  /// Field name -> the first reason it had no value.
  const std::map<std::string, std::string>& missing() const { return missing_; }

 private:
  void note_missing(const char* field, const std::string& why);

  std::string root_;
  std::optional<ProcStat> previous_;
  std::optional<std::int64_t> mem_total_;
  std::string reason_;
  std::map<std::string, std::string> missing_;
};

/// `ORCH_PROC_ROOT` when set (tests point it at a folder of fake /proc files), else "/proc".
std::string default_proc_root();

struct HostSamplerOptions {
  int interval_ms = 100;
  std::string proc_root = default_proc_root();
};

class HostSampler {
 public:
  /// Reads /proc/stat once; never throws. When that fails the sampler is unavailable,
  /// start() does nothing and stop() returns the reason.
  explicit HostSampler(HostSamplerOptions options);
  ~HostSampler();  // stops the thread if still running
  HostSampler(const HostSampler&) = delete;
  HostSampler& operator=(const HostSampler&) = delete;

  bool available() const { return probe_.first().has_value(); }
  const std::string& unavailable_reason() const { return probe_.unreadable_reason(); }

  /// Starts the sampling thread; t = 0 for every timestamp is now.
  void start();
  /// The measured steps begin / end now (called by the training thread; two atomic stores).
  void mark_measure_begin();
  void mark_measure_end();
  /// Stops and joins the thread, and hands over everything collected. Call once.
  HostTelemetryRecord stop();

 private:
  void run();
  std::int64_t ns_since_start() const;

  HostSamplerOptions options_;
  HostProbe probe_;
  int cores_ = 0;
  std::chrono::steady_clock::time_point start_{};
  std::atomic<std::int64_t> measure_begin_ns_{-1}, measure_end_ns_{-1};
  std::vector<HostSample> samples_;  // written by the sampling thread, read after the join
  std::mutex mutex_;                 // guards stop_ only
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

/// The document's `host_telemetry` object:
/// {available, reason, source: "procfs", interval_ms, measure_window_s: [t0, t1] | null,
///  cores, mem_total_bytes, samples: [{t_s, cpu_util_pct, busiest_core_pct, busiest_core,
///  load1, mem_available_bytes}] (null = missing), missing: {field: reason}}.
nlohmann::json host_telemetry_json(const HostTelemetryRecord& record);

/// Summaries over the samples inside the measure window, for `metrics`:
/// host_cpu_util_mean_pct, host_cpu_util_max_pct, host_cpu_busiest_core_mean_pct (the core
/// whose mean share over the window is highest), host_load1_mean, host_load1_max,
/// host_mem_available_min_bytes, host_cpu_cores and host_telemetry_samples. A summary without
/// values is left out; nothing at all when unavailable or the window was never marked.
nlohmann::json host_telemetry_metrics(const HostTelemetryRecord& record);

}  // namespace orch
