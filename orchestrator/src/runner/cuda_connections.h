// `cuda_connections`: how many hardware work queues the CUDA driver gives this process
// (CUDA_DEVICE_MAX_CONNECTIONS). The driver multiplexes every stream of a process onto them
// (default 8, at most 32), so two streams that share a queue are serialised: work on one
// waits behind the other's earlier work even without any dependency between them. With a
// graph-captured training step queued on one stream, a data loader's side streams (nvJPEG
// works on ~14-40 internal ones) wait behind the whole step. With 32 connections the nvjpeg
// loader's event waits under a graph-captured step shrink from hundreds of milliseconds to a
// few per 10 steps and graph-mode training gets faster; with synthetic data nothing changes.
//
// The driver reads the variable when the process's CUDA context is made, so it is set before
// anything touches CUDA: `orch exec` (each run of `orch sweep`, and Slurm tasks) sets it for
// its one run, before loading any plugin; `orch run`, which runs every configuration in one
// process, restarts itself once with the variable set (it has loaded the plugins to plan) and
// refuses an experiment whose configurations differ in it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/run_spec.h"

namespace orch {

inline constexpr const char* kCudaConnectionsVariable = "CUDA_DEVICE_MAX_CONNECTIONS";

/// Sets CUDA_DEVICE_MAX_CONNECTIONS to the run's `cuda_connections`; nothing when the run
/// leaves it to the driver. Call before the process first uses CUDA.
void apply_cuda_connections(const RunSpec& spec);

/// Why this process cannot run `spec` as configured: its `cuda_connections` is not what the
/// process's environment says (the run was started in a process set up for another value).
/// Empty when it can.
std::optional<std::string> cuda_connections_mismatch(const RunSpec& spec);

/// The one `cuda_connections` of `runs` (empty: the driver's), for `orch run`'s single process.
/// Throws std::invalid_argument naming two configurations that differ.
std::optional<std::int64_t> common_cuda_connections(const std::vector<RunSpec>& runs);

}  // namespace orch
