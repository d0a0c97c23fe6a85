// The run diagnosis: input-, PCIe-, launch- or compute-bound, from a result document.
#include "analysis/diagnosis.h"

#include <fmt/format.h>

#include "result/core_metrics.h"
#include "result/json_fields.h"

namespace orch::analysis {
namespace {

std::optional<double> number_at(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string gb_per_s(double bytes_per_s) { return fmt::format("{:.1f} GB/s", bytes_per_s / 1e9); }

// What a GPU profile (the document's `profile`, runner/profiler.h) says about launching.
struct ProfileEvidence {
  double busy_pct = 0;  // share of the profiled steps during which a kernel ran
  std::string text;     // "trace: 812 kernels/step, mean kernel 14 us, GPU busy 62% of the ..."
};

std::optional<ProfileEvidence> profile_evidence(const nlohmann::json& profile) {
  if (!profile.is_object()) return std::nullopt;
  const auto kernels = number_at(profile, "kernels_per_step");
  const auto share = number_at(profile, "gpu_busy_share");
  const auto profiled_step = number_at(profile, "step_ms");
  // A CPU profile has no kernels and says nothing about the GPU.
  if (!kernels || *kernels <= 0 || !share || !profiled_step) return std::nullopt;
  ProfileEvidence e;
  e.busy_pct = 100 * *share;
  e.text = fmt::format("trace: {:.0f} kernels/step", *kernels);
  // The mean kernel against the few microseconds a launch costs the host: kernels shorter
  // than their launch leave the GPU waiting whatever the batch.
  if (const auto kernel_ms = number_at(profile, "gpu_kernel_ms_per_step")) {
    e.text += fmt::format(", mean kernel {:.0f} us", 1000 * *kernel_ms / *kernels);
  }
  // The share is of the measured step (profile_summary.h says why); the profiled step's is
  // shown beside it, because the gap between the two is the profiler's own host time.
  const auto measured_step = number_at(profile, "measured_step_ms");
  const auto profiled_share = number_at(profile, "gpu_busy_share_profiled");
  if (measured_step && profiled_share) {
    e.text += fmt::format(
        ", GPU busy {:.0f}% of the {:.2f} ms step ({:.0f}% of the {:.2f} ms "
        "profiled step)",
        e.busy_pct, *measured_step, 100 * *profiled_share, *profiled_step);
  } else {
    e.text += fmt::format(", GPU busy {:.0f}% of the {:.2f} ms profiled step", e.busy_pct,
                          *profiled_step);
  }
  return e;
}

}  // namespace

std::optional<double> pcie_link_bytes_per_s(int generation, int width) {
  // Per lane and direction, after encoding: 8b/10b for Gen1-2, 128b/130b for Gen3-5, FLIT for
  // Gen6 (PCI-SIG figures).
  static constexpr double kLaneBytesPerS[] = {0, 250e6, 500e6, 984.6e6, 1969.2e6, 3938.5e6, 7563e6};
  if (generation < 1 || generation > 6 || width < 1) return std::nullopt;
  return kLaneBytesPerS[generation] * width;
}

namespace {

// telemetry_window_mean over the document's `telemetry` section.
std::optional<double> window_mean(const nlohmann::json& telemetry, const std::string& field) {
  if (!telemetry.is_object()) return std::nullopt;
  const auto tel = &telemetry;
  const auto samples = tel->find("samples");
  if (samples == tel->end() || !samples->is_array()) return std::nullopt;
  double t0 = -1e300, t1 = 1e300;
  if (auto w = tel->find("measure_window_s"); w != tel->end() && w->is_array() && w->size() == 2 &&
                                              (*w)[0].is_number() && (*w)[1].is_number()) {
    t0 = (*w)[0].get<double>();
    t1 = (*w)[1].get<double>();
  }
  auto mean_of = [&](bool window_only) -> std::optional<double> {
    double sum = 0;
    int n = 0;
    for (const auto& s : *samples) {
      const auto v = number_at(s, field.c_str());
      if (!v) continue;
      if (window_only) {
        const auto t = number_at(s, "t_s");
        if (!t || *t < t0 || *t > t1) continue;
      }
      sum += *v;
      ++n;
    }
    if (n == 0) return std::nullopt;
    return sum / n;
  };
  if (auto m = mean_of(true)) return m;
  return mean_of(false);
}

}  // namespace

std::optional<std::string> host_cpu_evidence(const nlohmann::json& metrics) {
  const auto all = number_at(metrics, metric_key::kHostCpuUtilMeanPct);
  if (!all) return std::nullopt;
  const auto core = number_at(metrics, metric_key::kHostCpuBusiestCoreMeanPct);
  const auto cores = number_at(metrics, metric_key::kHostCpuCores);
  const std::string of = cores ? fmt::format(" of {:.0f}", *cores) : "";
  if (*all >= kHostBusyPct) {
    return fmt::format(
        "host CPU busy: all{} cores {:.0f}% (at least {:.0f}%): the loader needs more CPU than "
        "the host has (lighter decoding, GPU decoding, cached tensors)",
        of, *all, kHostBusyPct);
  }
  if (core && *core >= kCorePeggedPct) {
    return fmt::format(
        "one host core pegged: the busiest{} cores {:.0f}% (at least {:.0f}%) while all average "
        "{:.0f}%: a single-threaded loader or launch thread (more loader workers, or CUDA graphs)",
        of, *core, kCorePeggedPct, *all);
  }
  return std::nullopt;
}

std::optional<double> telemetry_window_mean(const nlohmann::json& doc, const std::string& field) {
  if (!doc.is_object()) return std::nullopt;
  const auto tel = doc.find("telemetry");
  return tel == doc.end() ? std::nullopt : window_mean(*tel, field);
}

std::optional<Diagnosis> diagnose(const nlohmann::json& doc) {
  return diagnose(result_from_json(doc));
}

namespace {

// The input figures every label's detail cites, and whether they make the run input-bound.
struct InputFigures {
  double input_share = 0, input_threshold = kInputBoundWaitShare;
  std::string wait_text;  // the input figures, as every label's detail cites them
  std::string no_wait = "with no data wait";
};

InputFigures input_figures(const nlohmann::json& metrics, double step) {
  const double wait = number_at(metrics, metric_key::kDataWaitMsMean).value_or(0.0);
  const double wait_share = wait / step;
  // What decides input-bound: the GPU's idle time for want of a batch where the runner
  // measured it (a CUDA run), else the host's wait for the loader (a CPU run, where the host
  // does the work itself, or an older document).
  const auto idle = number_at(metrics, metric_key::kGpuIdleMsMean);
  InputFigures f;
  f.input_share = wait_share;
  if (!idle) {
    f.wait_text = fmt::format("data wait {:.2f} ms = {:.1f}% of the {:.2f} ms step", wait,
                              100 * wait_share, step);
    return f;
  }
  f.input_share = *idle / step;
  f.input_threshold = kInputBoundIdleShare;
  f.no_wait = "with the GPU not waiting for input";
  // The host's split stays a figure of its own: with steps queued ahead on the GPU (an
  // asynchronously replayed graph above all), the host waits for the loader while the GPU
  // is still busy, and the two disagree.
  f.wait_text = fmt::format(
      "GPU idle {:.2f} ms = {:.1f}% of the {:.2f} ms step waiting for input (host data wait "
      "{:.2f} ms / compute {:.2f} ms",
      *idle, 100 * f.input_share, step, wait, step - wait);
  if (f.input_share <= f.input_threshold && wait_share > kInputBoundWaitShare) {
    f.wait_text += ": the host waited for the loader while the GPU worked through queued steps";
  }
  f.wait_text += ")";
  return f;
}

// PCIe: host-to-device traffic (NVML's RX, as seen by the GPU) against the link's rate. The
// figures' text, empty when either is unknown; `bound` when the traffic saturates the link.
std::string pcie_figures(const ResultDocument& doc, bool& bound) {
  bound = false;
  std::optional<double> rx = number_at(doc.metrics, metric_key::kPcieRxMeanBytesPerS);
  if (!rx) rx = window_mean(doc.telemetry, "pcie_rx_bytes_per_s");
  const nlohmann::json pcie = json_object(doc.environment, "pcie");
  const auto gen = number_at(pcie, "gen_current");
  const auto width = number_at(pcie, "width_current");
  std::optional<double> link;
  if (gen && width) link = pcie_link_bytes_per_s(static_cast<int>(*gen), static_cast<int>(*width));
  if (!rx || !link) return {};
  const double share = *rx / *link;
  bound = share >= kPcieBoundShare;
  return fmt::format("PCIe RX {} = {:.0f}% of Gen{} x{} ({})", gb_per_s(*rx), 100 * share,
                     static_cast<int>(*gen), static_cast<int>(*width), gb_per_s(*link));
}

// No NVML utilization: a GPU profile's busy share decides, else nothing does.
Diagnosis diagnose_without_nvml(const ResultDocument& doc, const InputFigures& in,
                                const std::string& pcie_text,
                                const std::optional<ProfileEvidence>& trace) {
  if (trace) {
    // A GPU profile: its busy share measures what NVML's utilization estimates (the time a
    // kernel ran), from the profiled steps' kernels against the measured step.
    std::string detail = fmt::format("{}; {}", trace->text, in.wait_text);
    if (!pcie_text.empty()) detail += "; " + pcie_text;
    if (trace->busy_pct < kBusyUtilPct) {
      return Diagnosis{"launch-bound", fmt::format("{} (GPU busy under {:.0f}% {}, from the trace: "
                                                   "no NVML utilization)",
                                                   detail, kBusyUtilPct, in.no_wait)};
    }
    return Diagnosis{"compute-bound", detail + " (no NVML utilization)"};
  }
  std::string why = "no GPU utilization recorded";
  const nlohmann::json& tel = doc.telemetry;
  if (tel.is_object() && tel.contains("reason") && tel["reason"].is_string()) {
    why += ": " + tel["reason"].get<std::string>();
  } else if (doc.device && doc.device->rfind("cpu", 0) == 0) {
    why += ": CPU run";
  }
  return Diagnosis{"unknown (no telemetry)", fmt::format("{}; {}", in.wait_text, why)};
}

// NVML's mean utilization decides launch- vs compute-bound.
Diagnosis diagnose_with_nvml(double util, const InputFigures& in, const std::string& pcie_text,
                             const std::optional<ProfileEvidence>& trace,
                             const std::optional<std::string>& host) {
  std::string detail = fmt::format("GPU busy {:.0f}% (NVML mean); {}", util, in.wait_text);
  if (!pcie_text.empty()) detail += "; " + pcie_text;
  // NVML decides (it covers the measured steps, the profile only extra ones with the profiler's
  // own host cost); the trace's numbers stand beside it as the evidence to look at.
  if (trace) detail += "; " + trace->text;
  if (util < kBusyUtilPct) {
    detail = fmt::format("{} (GPU busy under {:.0f}% {})", detail, kBusyUtilPct, in.no_wait);
    // The GPU waits, yet not at the batch hand-off: a host this busy may be starving the
    // training thread itself (loader workers competing with it for cores).
    if (host) detail += "; input-bound hint: " + *host;
    return Diagnosis{"launch-bound", detail};
  }
  if (trace && trace->busy_pct < kBusyUtilPct) {
    // NVML counts a sampling period as busy when any kernel ran in it, so short gaps between
    // kernels can hide from it; the trace measures them.
    detail += fmt::format(
        " (the trace finds the GPU busy under {:.0f}%: look for gaps between "
        "kernels in it)",
        kBusyUtilPct);
  }
  return Diagnosis{"compute-bound", detail};
}

}  // namespace

std::optional<Diagnosis> diagnose(const ResultDocument& doc) {
  if (!doc.ok()) return std::nullopt;
  const nlohmann::json& metrics = doc.metrics;
  const auto step = number_at(metrics, metric_key::kStepMsMean);
  if (!step || *step <= 0) return std::nullopt;
  const InputFigures in = input_figures(metrics, *step);

  // The host's CPU, where the GPU is under-used; on a CPU run the host is the device, and its
  // busy cores are the work itself.
  const bool on_gpu = !(doc.device && doc.device->rfind("cpu", 0) == 0);
  const auto host = on_gpu ? host_cpu_evidence(metrics) : std::nullopt;
  if (in.input_share > in.input_threshold) {
    std::string detail = fmt::format("{} (over {:.0f}%)", in.wait_text, 100 * in.input_threshold);
    if (host) detail += "; " + *host;
    return Diagnosis{"input-bound", detail};
  }

  bool pcie_bound = false;
  const std::string pcie_text = pcie_figures(doc, pcie_bound);
  if (pcie_bound) {
    return Diagnosis{"pcie-bound", fmt::format("{} (at least {:.0f}%); {}", pcie_text,
                                               100 * kPcieBoundShare, in.wait_text)};
  }

  std::optional<double> util = number_at(metrics, metric_key::kGpuUtilMeanPct);
  if (!util) util = window_mean(doc.telemetry, "gpu_util_pct");
  const auto trace = profile_evidence(doc.profile);
  if (!util) return diagnose_without_nvml(doc, in, pcie_text, trace);
  return diagnose_with_nvml(*util, in, pcie_text, trace, host);
}

}  // namespace orch::analysis
