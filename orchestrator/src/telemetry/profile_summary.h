// The numbers orch keeps from a profiler trace: kernels per step, GPU time per step against the
// step's wall time (the GPU busy share), and the operations that took the most time. The runner
// turns LibTorch's profiler events into TraceEvents (runner/profiler.cpp); this part knows
// nothing of LibTorch, so it is tested with hand-made events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace orch {

enum class TraceEventKind {
  kCpuOp,      ///< an ATen operator on the host (aten::convolution)
  kUserScope,  ///< a range the runner marked ("forward", "backward + optimizer")
  kKernel,     ///< a GPU kernel
  kMemcpy,     ///< a GPU copy
  kMemset,     ///< a GPU memset
  kLaunch,     ///< a host call that launches GPU work (cudaLaunchKernel, cudaGraphLaunch)
  kOther,      ///< anything else (other runtime calls, overhead markers)
};

struct TraceEvent {
  TraceEventKind kind = TraceEventKind::kOther;
  std::string name;
  std::uint64_t thread = 0;  ///< host thread of a CPU event; nesting is per thread
  std::int64_t start_ns = 0, end_ns = 0;
};

/// How many entries the `top_kernels` and `top_cpu_ops` lists keep.
constexpr std::size_t kProfileTopOps = 10;

/// The steps a trace covers.
struct ProfileWindow {
  std::int64_t steps = 0;       ///< profiled steps
  double wall_ms = 0;           ///< their wall time, profiler on
  double measured_step_ms = 0;  ///< the run's measured step time, profiler off; 0: unknown
  bool gpu = false;             ///< CUDA activity was recorded
};

/// The summary of a profiled window:
///   step_ms                 wall_ms / steps
///   measured_step_ms        the measured step time (null when unknown)
///   kernels_per_step        GPU kernels per step (0 on the CPU, which has none)
///   gpu_kernel_ms_per_step  the kernels' durations summed, per step (kernels on several streams
///                           can add up to more than the step)
///   gpu_busy_ms_per_step    time during which at least one kernel ran, per step
///   gpu_busy_share          gpu_busy_ms_per_step / measured_step_ms, in [0, 1]: what NVML's
///                           utilization estimates, for the measured steps. The profiler costs
///                           host time per operator but not GPU time, so a step's kernels take
///                           what they took unprofiled, while a launch-bound step gets longer
///                           (a small-batch ResNet-50 step can take twice as long profiled).
///                           Over the profiled wall time the share would understate the GPU.
///                           Without a measured step time, the profiled one is used.
///   gpu_busy_share_profiled gpu_busy_ms_per_step / step_ms: the share in the profiled steps
///   cuda_launches_per_step  host calls that launched GPU work, per step
///   cpu_ops_per_step        ATen operators per step (nested ones included)
///   top_kernels             [{name, calls, total_ms, self_ms, share}] by time, share of all
///                           kernel time
///   top_cpu_ops             the same for host operators, by self time (an op's time minus the
///                           ops it called, so nested ops are not counted twice); share of all
///                           operator self time
/// The GPU fields are null when `window.gpu` is false.
nlohmann::json summarize_profile(const std::vector<TraceEvent>& events, const ProfileWindow& window,
                                 std::size_t top = kProfileTopOps);

}  // namespace orch
