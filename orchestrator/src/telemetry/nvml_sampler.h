// NvmlSampler: a background thread that samples one GPU through NVML at a fixed interval
// while a run trains (the article's GPU-Util / power saw-tooth, as a timeline).
//
// Telemetry never hurts the run: no NVML, no driver or no such device makes the sampler
// "unavailable" with a reason; a query that fails stores null for that field (its reason kept
// once) and sampling goes on; GPU_IS_LOST / RESET_REQUIRED stop sampling and set gpu_lost.
// Nothing here throws after construction, and the training thread only ever touches two
// atomics (the measure-window marks).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/nvml_library.h"
#include "telemetry/telemetry_record.h"

namespace orch {

struct SamplerOptions {
  int interval_ms = 100;
  /// The GPU to sample, as a PCI bus id ("0000:3b:00.0"): the one identity that CUDA and NVML
  /// agree on whatever CUDA_VISIBLE_DEVICES does to device numbers.
  std::string pci_bus_id;
};

class NvmlSampler {
 public:
  /// Opens NVML and finds the device; never throws. When that fails the sampler is
  /// unavailable, start() does nothing and stop() returns the reason.
  explicit NvmlSampler(SamplerOptions options);
  ~NvmlSampler();  // stops the thread if still running
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  bool available() const { return device_ != nullptr; }
  const std::string& unavailable_reason() const { return reason_; }

  /// Starts the sampling thread; t = 0 for every timestamp is now.
  void start();
  /// The measured steps begin / end now (called by the training thread; two atomic stores).
  void mark_measure_begin();
  void mark_measure_end();
  /// True once a query said the GPU is lost (readable while running).
  bool gpu_lost() const { return gpu_lost_.load(std::memory_order_relaxed); }

  /// Stops and joins the thread, and hands over everything collected. Call once.
  TelemetryRecord stop();

 private:
  void run();
  void take_sample(double t_s);
  // take_sample's queries, one NVML entry point each, in the order they are asked. Each
  // returns false when the GPU is lost and sampling must stop.
  bool sample_utilization(GpuSample& s);
  bool sample_power(GpuSample& s);
  bool sample_clocks(GpuSample& s);
  bool sample_temperature(GpuSample& s);
  bool sample_memory_used(GpuSample& s);
  bool sample_pcie_throughput(GpuSample& s);
  bool sample_throttle_reasons(GpuSample& s);
  /// Asks `query` (which returns NVML's answer and fills in the value) for one field, unless
  /// the field is off or its entry point `fn` is absent.
  template <class Query>
  bool sample_field(GpuSample& s, GpuField field, const void* fn, const char* symbol, Query query);
  bool is_off(GpuField field) const;
  /// An entry point this driver's NVML does not export is as good as NOT_SUPPORTED: true, and
  /// the field off, when `fn` is null.
  bool absent(GpuField field, const void* fn, const char* symbol);
  /// Records a failed query of `field`: NOT_SUPPORTED (or an absent entry point) turns the
  /// field off for good, a lost GPU stops sampling, anything else is retried next time.
  /// Returns false when sampling must stop.
  bool failed(GpuField field, nvml::Return r);
  void note_missing(GpuField field, const std::string& why);
  double seconds_since_start() const;

  SamplerOptions options_;
  std::unique_ptr<NvmlLibrary> nvml_;
  nvml::Device device_ = nullptr;
  std::string reason_;

  std::chrono::steady_clock::time_point start_{};
  std::atomic<std::int64_t> measure_begin_ns_{-1}, measure_end_ns_{-1};
  std::atomic<bool> gpu_lost_{false};

  // Written only by the sampling thread, read after it is joined.
  std::vector<GpuSample> samples_;
  std::array<bool, kGpuFieldCount> off_{};       // NOT_SUPPORTED: never asked again
  std::array<std::string, kGpuFieldCount> why_;  // first reason a field was null
  std::string gpu_lost_reason_;

  std::mutex mutex_;  // guards stop_ only; never held while calling NVML
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace orch
