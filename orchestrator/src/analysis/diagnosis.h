// Why a run was as fast as it was: a short label and the numbers behind it, computed from the
// result document alone (a pure function, so it can be recomputed for old documents).
//
// It lives in analysis/, below both the store and the report: the store computes it at record
// time (and again when a migration changes its rules), the report shows it, and it needs no
// SQLite.
//
// Labels, checked in this order (the first that holds wins):
//   input-bound             the GPU sits idle waiting for the data loader (on the CPU, or
//                           without the GPU's figure, the host's wait for it)
//   pcie-bound              host-to-device traffic near the PCIe link's bandwidth
//   launch-bound            the GPU is idle much of the step although no data is awaited
//   compute-bound           the GPU is busy and no data is awaited
//   unknown (no telemetry)  no GPU utilization recorded (CPU run, no NVML, old document)
//
// A GPU run whose GPU is under-used (input-bound, or launch-bound) and whose host CPU was busy
// over the measured steps (telemetry/host_sampler.h) gains the host's evidence in its detail:
// every core busy (the loader needs more CPU than the host has), or one core pegged while the
// others idle (a single-threaded loader, or the one thread that launches the kernels).
//
// "GPU busy" is NVML's mean utilization over the measured steps. A run profiled on a GPU
// (`profile.steps`) adds the trace's kernels per step, mean kernel time and busy share to the
// detail, and decides launch- vs compute-bound from the trace's busy share when NVML recorded
// nothing.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "result/result_document.h"

namespace orch::analysis {

/// A data wait above this share of the step time makes a run input-bound. At 10% the loader
/// costs a tenth of the throughput, which the article's input-pipeline tips recover; below it,
/// timer noise and the host's hand-off dominate. Used where the GPU's idle time is not known
/// (CPU runs, older documents): on the CPU the host does the work, so its wait is the device's.
constexpr double kInputBoundWaitShare = 0.10;

/// GPU idle time for want of a batch (`gpu_idle_ms_mean`, the compute stream's gap at each
/// batch hand-off, runner/step_timer.h) above this share of the step makes a run input-bound.
/// Time the GPU waits is added to the step one for one, so this share is exactly the
/// throughput the loader costs, which is what the host's 10% above only approximates (and
/// overstates whenever the GPU has steps queued while the host waits). Below it, the hand-off
/// itself (the loader's return, two events) on a GPU that keeps up with the host is what is
/// measured, a few microseconds that a short step can turn into a few percent.
constexpr double kInputBoundIdleShare = 0.10;

/// NVML's utilization is the share of time at least one kernel ran. Below 80% with no data
/// wait, the GPU runs out of queued work between kernels: the host does not launch fast enough
/// (small kernels, synchronisations), which CUDA graphs or larger batches address. Well-fed
/// ResNet training sits at 95-100%.
constexpr double kBusyUtilPct = 80.0;

/// PCIe RX above this share of the link's theoretical bandwidth is saturation in practice:
/// measured host-to-device copies top out around 80-90% of the theoretical rate.
constexpr double kPcieBoundShare = 0.70;

/// The host's CPU, all cores together, at or above this mean share over the measured steps is
/// busy: more loader workers would only compete with the training thread for what is left.
constexpr double kHostBusyPct = 85.0;

/// One core at or above this mean share is pegged: a thread that never waits, which no other
/// core can help (a single-threaded loader or launch thread). Per-core shares are sampled at
/// USER_HZ (10 ms ticks), so a thread that runs all the time reads 95-100%.
constexpr double kCorePeggedPct = 90.0;

struct Diagnosis {
  std::string label;   ///< one of the labels above
  std::string detail;  ///< the numbers that led to it, one line
};

/// The diagnosis of a finished run; nullopt when it did not succeed or has no step metrics.
std::optional<Diagnosis> diagnose(const ResultDocument& document);
/// The same for a document as JSON (a stored one, when the store is migrated).
std::optional<Diagnosis> diagnose(const nlohmann::json& document);

/// The host's evidence for an under-used GPU, from the `host_cpu_*` metrics: "host CPU busy:
/// ..." or "one host core pegged: ..."; nullopt when the host had CPU to spare or was not
/// sampled.
std::optional<std::string> host_cpu_evidence(const nlohmann::json& metrics);

/// Theoretical one-direction bandwidth of a PCIe link in bytes/s (after line encoding), or
/// nullopt for an unknown generation or width.
std::optional<double> pcie_link_bytes_per_s(int generation, int width);

/// Mean of a telemetry sample field over the measured window (all samples when none fall in
/// it); nullopt when the document has no value for it.
std::optional<double> telemetry_window_mean(const nlohmann::json& document,
                                            const std::string& field);

}  // namespace orch::analysis
