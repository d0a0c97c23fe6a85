// LibTorch's profiler (Kineto) over extra training steps, run after the measured ones so the
// measured throughput is not perturbed: a Chrome trace file (chrome://tracing, Perfetto) and the
// summary the store keeps (telemetry/profile_summary.h).
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace orch {

/// Runs `step()` `steps` times under the profiler (CPU activity, and CUDA on a GPU) and returns
/// the result document's `profile` section: {steps, profiler, activities, trace, trace_bytes}
/// and the summary fields of summarize_profile. `measured_step_ms` is the run's step time
/// without the profiler, against which the GPU busy share is computed. The Chrome trace is written
/// to `trace_path` (its folder created) unless the path is empty (`trace` is then null).
///
/// Profiling is an extra: a profiler that cannot start, a step that throws under it, or a trace
/// that cannot be written is reported in the section's `error`, never thrown, because the run's
/// measurement is already complete. The profiler is always disabled again before returning.
nlohmann::json profile_steps(std::int64_t steps, const c10::Device& device,
                             const std::string& trace_path, double measured_step_ms,
                             const std::function<void()>& step);

}  // namespace orch
