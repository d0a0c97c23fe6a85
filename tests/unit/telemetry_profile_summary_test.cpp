// summarize_profile on hand-made trace events: kernels per step, the GPU busy share when kernels
// of two streams overlap, self time of nested host operators, the top lists, and a CPU run
// (no kernels, GPU fields null).
#include <catch2/catch.hpp>

#include "telemetry/profile_summary.h"

namespace orch {
namespace {

using K = TraceEventKind;

TraceEvent ev(K kind, std::string name, std::int64_t start_us, std::int64_t end_us,
              std::uint64_t thread = 1) {
  return TraceEvent{kind, std::move(name), thread, start_us * 1000, end_us * 1000};
}

TEST_CASE("profile summary: kernels per step and the busy share of overlapping kernels",
          "[profile][summary]") {
  // Two steps of 10 ms. Step 1: kernels 0-2 ms and 1-3 ms overlap (busy 3 ms, 4 ms of kernel
  // time), one at 5-6 ms. Step 2: 10-14 ms. Busy 3 + 1 + 4 = 8 ms of 20.
  const std::vector<TraceEvent> events = {
      ev(K::kKernel, "gemm", 0, 2000),
      ev(K::kKernel, "relu", 1000, 3000),
      ev(K::kKernel, "gemm", 5000, 6000),
      ev(K::kKernel, "gemm", 10000, 14000),
      ev(K::kMemcpy, "Memcpy HtoD", 0, 9000),  // not a kernel: neither counted nor busy
      ev(K::kLaunch, "cudaLaunchKernel", 0, 5),
      ev(K::kLaunch, "cudaLaunchKernel", 10, 15),
      ev(K::kLaunch, "cudaLaunchKernel", 20, 25),
      ev(K::kLaunch, "cudaLaunchKernel", 30, 35),
  };
  // Unprofiled, the step took 8 ms: the profiler's host time made it 10.
  const auto s = summarize_profile(events, {2, 20.0, 8.0, true});
  CHECK(s["step_ms"] == Approx(10.0));
  CHECK(s["measured_step_ms"] == Approx(8.0));
  CHECK(s["kernels_per_step"] == Approx(2.0));
  CHECK(s["gpu_kernel_ms_per_step"] == Approx(4.5));   // (2 + 2 + 1 + 4) / 2
  CHECK(s["gpu_busy_ms_per_step"] == Approx(4.0));     // 8 ms busy / 2 steps
  CHECK(s["gpu_busy_share"] == Approx(0.5));           // of the measured 8 ms
  CHECK(s["gpu_busy_share_profiled"] == Approx(0.4));  // of the profiled 10 ms
  CHECK(s["cuda_launches_per_step"] == Approx(2.0));
  const auto& top = s["top_kernels"];
  REQUIRE(top.size() == 2);
  CHECK(top[0]["name"] == "gemm");
  CHECK(top[0]["calls"] == 3);
  CHECK(top[0]["total_ms"] == Approx(7.0));
  CHECK(top[0]["self_ms"] == Approx(7.0));
  CHECK(top[0]["share"] == Approx(7.0 / 9.0));
  CHECK(top[1]["name"] == "relu");
  CHECK(top[1]["share"] == Approx(2.0 / 9.0));
  // Without a measured step time, the share is that of the profiled steps.
  const auto unknown = summarize_profile(events, {2, 20.0, 0.0, true});
  CHECK(unknown["measured_step_ms"].is_null());
  CHECK(unknown["gpu_busy_share"] == Approx(0.4));
}

TEST_CASE("profile summary: the busy share never exceeds 1", "[profile][summary]") {
  // Kernel timestamps a little past the host's wall time (GPU and host clocks differ).
  const auto s = summarize_profile({ev(K::kKernel, "k", 0, 10500)}, {1, 10.0, 9.0, true});
  CHECK(s["gpu_busy_share"] == Approx(1.0));
  CHECK(s["gpu_busy_share_profiled"] == Approx(1.0));
}

TEST_CASE("profile summary: host operators are ranked by self time, nesting per thread",
          "[profile][summary]") {
  // forward (user scope) 0-100 us holds conv2d 10-60, which holds convolution 15-55, which
  // holds mkldnn 20-50; relu 70-90. Thread 2 runs an add 0-30 at the same time.
  const std::vector<TraceEvent> events = {
      ev(K::kUserScope, "forward", 0, 100),       ev(K::kCpuOp, "aten::conv2d", 10, 60),
      ev(K::kCpuOp, "aten::convolution", 15, 55), ev(K::kCpuOp, "aten::mkldnn_convolution", 20, 50),
      ev(K::kCpuOp, "aten::relu", 70, 90),        ev(K::kCpuOp, "aten::add", 0, 30, /*thread=*/2),
  };
  const auto s = summarize_profile(events, {1, 0.1, 0.1, /*gpu=*/false});
  CHECK(s["kernels_per_step"] == 0.0);
  CHECK(s["gpu_busy_share"].is_null());
  CHECK(s["gpu_busy_share_profiled"].is_null());
  CHECK(s["gpu_kernel_ms_per_step"].is_null());
  CHECK(s["cuda_launches_per_step"].is_null());
  CHECK(s["top_kernels"].empty());
  CHECK(s["cpu_ops_per_step"] == Approx(5.0));  // the user scope is not an operator
  const auto& ops = s["top_cpu_ops"];
  REQUIRE(ops.size() == 5);
  // self: mkldnn 30, add 30, relu 20, conv2d 50-40 = 10, convolution 40-30 = 10; all 100 us.
  CHECK(ops[0]["name"] == "aten::add");  // 30 us, ties broken by name
  CHECK(ops[1]["name"] == "aten::mkldnn_convolution");
  CHECK(ops[1]["self_ms"] == Approx(0.030));
  CHECK(ops[1]["total_ms"] == Approx(0.030));
  CHECK(ops[2]["name"] == "aten::relu");
  CHECK(ops[3]["name"] == "aten::conv2d");
  CHECK(ops[3]["self_ms"] == Approx(0.010));
  CHECK(ops[3]["total_ms"] == Approx(0.050));
  CHECK(ops[4]["name"] == "aten::convolution");
  CHECK(ops[1]["share"] == Approx(0.3));
  double shares = 0;
  for (const auto& op : ops) shares += op["share"].get<double>();
  CHECK(shares == Approx(1.0));
}

TEST_CASE("profile summary: the top lists keep the most expensive entries", "[profile][summary]") {
  std::vector<TraceEvent> events;
  for (int i = 0; i < 15; ++i) {
    events.push_back(ev(K::kKernel, "k" + std::to_string(i), i * 100, i * 100 + 1 + i));
  }
  const auto s = summarize_profile(events, {3, 30.0, 0.0, true}, /*top=*/4);
  REQUIRE(s["top_kernels"].size() == 4);
  CHECK(s["top_kernels"][0]["name"] == "k14");
  CHECK(s["top_kernels"][3]["name"] == "k11");
  CHECK(s["kernels_per_step"] == Approx(5.0));
}

}  // namespace
}  // namespace orch
