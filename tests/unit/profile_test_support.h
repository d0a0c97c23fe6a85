// Result documents' `profile` sections as the runner writes them (runner/profiler.cpp), for the
// store and report tests.
#pragma once

#include <nlohmann/json.hpp>

namespace orch::test {

// A GPU profile as the runner writes it (runner/profiler.cpp).
inline nlohmann::json gpu_profile(double busy_share = 0.45, double kernels = 820) {
  return {{"steps", 5},
          {"profiler", "kineto"},
          {"activities", {"cpu", "cuda"}},
          {"trace", "/results/q.db.runs/q/0123456789ab-r0/trace.json"},
          {"trace_bytes", 12345678},
          {"step_ms", 40.0},
          {"measured_step_ms", 20.0},
          {"kernels_per_step", kernels},
          {"gpu_kernel_ms_per_step", 9.5},
          {"gpu_busy_ms_per_step", 20.0 * busy_share},
          {"gpu_busy_share", busy_share},
          {"gpu_busy_share_profiled", busy_share / 2},
          {"cuda_launches_per_step", 790.0},
          {"cpu_ops_per_step", 2400.0},
          {"top_kernels",
           {{{"name", "sm90_xmma_gemm_bf16"},
             {"calls", 300},
             {"total_ms", 30.0},
             {"self_ms", 30.0},
             {"share", 0.63}},
            {{"name", "vectorized_elementwise_kernel<relu>"},
             {"calls", 800},
             {"total_ms", 10.0},
             {"self_ms", 10.0},
             {"share", 0.21}}}},
          {"top_cpu_ops",
           {{{"name", "aten::convolution"},
             {"calls", 265},
             {"total_ms", 40.0},
             {"self_ms", 6.0},
             {"share", 0.3}}}}};
}

inline nlohmann::json cpu_profile() {
  return {{"steps", 2},
          {"profiler", "kineto"},
          {"activities", {"cpu"}},
          {"trace", nullptr},
          {"step_ms", 300.0},
          {"measured_step_ms", 280.0},
          {"kernels_per_step", 0.0},
          {"gpu_kernel_ms_per_step", nullptr},
          {"gpu_busy_ms_per_step", nullptr},
          {"gpu_busy_share", nullptr},
          {"gpu_busy_share_profiled", nullptr},
          {"cuda_launches_per_step", nullptr},
          {"cpu_ops_per_step", 900.0},
          {"top_kernels", nlohmann::json::array()},
          {"top_cpu_ops",
           {{{"name", "aten::mkldnn_convolution"},
             {"calls", 40},
             {"total_ms", 400.0},
             {"self_ms", 390.0},
             {"share", 0.7}},
            {{"name", "aten::native_batch_norm"},
             {"calls", 40},
             {"total_ms", 90.0},
             {"self_ms", 90.0},
             {"share", 0.16}}}}};
}

}  // namespace orch::test
