// The busy-GPU stand-in of `orch dataset bench --busy-gpu-ms` on a real GPU: a replay lasts
// about the asked length, replays keep coming while it lives, they really occupy the GPU (a
// product queued behind them on a stream of the same priority waits), and it stops cleanly.
#include "runner/busy_gpu.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

using namespace orch;

TEST_CASE("busy GPU: replays of about the asked length keep coming until it is destroyed",
          "[gpu][busy_gpu]") {
  const c10::Device device(c10::kCUDA, 0);
  std::int64_t seen = 0;
  {
    BusyGpu busy(device, 20.0);
    INFO(busy.products() << " products, " << busy.replay_ms() << " ms a replay");
    std::cout << "busy GPU: " << busy.products() << " products, " << busy.replay_ms()
              << " ms a replay\n";
    CHECK(busy.products() >= 1);
    // Calibrated on the idle GPU from one product's time: within a factor of 2 of the ask.
    CHECK(busy.replay_ms() > 10.0);
    CHECK(busy.replay_ms() < 40.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    seen = busy.replays();
    // ~25 replays of ~20 ms in 0.5 s; at least a third of that, whatever the clock does.
    CHECK(seen >= 8);
    CHECK(seen <= 50);

    // Work queued behind the replays on another normal-priority stream waits for the GPU:
    // 20 products alone vs the same 20 while the replays run.
    c10::cuda::CUDAStream other = c10::cuda::getStreamFromPool(false, 0);
    c10::cuda::CUDAStreamGuard on(other);
    const auto opts = torch::TensorOptions().dtype(torch::kBFloat16).device(device);
    auto a = torch::randn({4096, 4096}, opts), b = torch::randn({4096, 4096}, opts);
    auto c = torch::empty({4096, 4096}, opts);
    const auto wall_ms = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 20; ++i) at::matmul_out(c, a, b);
      other.synchronize();
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
          .count();
    };
    wall_ms();  // warm cuBLAS on this stream
    const double shared = wall_ms();
    const double alone_estimate = busy.replay_ms() / static_cast<double>(busy.products()) * 20.0;
    INFO("20 products: " << shared << " ms beside the replays, ~" << alone_estimate << " ms alone");
    std::cout << "20 products beside the replays: " << shared << " ms (alone ~" << alone_estimate
              << " ms)\n";
    CHECK(shared > 1.3 * alone_estimate);
  }
  // Destroyed: its thread has stopped and its stream drained, so the GPU is idle again.
  const auto t0 = std::chrono::steady_clock::now();
  torch::cuda::synchronize();
  CHECK(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() <
        5.0);
}

TEST_CASE("busy GPU: refuses a step of no length", "[gpu][busy_gpu]") {
  // (A CPU device is refused by `orch dataset bench` before it gets here: a CPU test.)
  CHECK_THROWS_AS(BusyGpu(c10::Device(c10::kCUDA, 0), 0.0), std::invalid_argument);
  CHECK_THROWS_AS(BusyGpu(c10::Device(c10::kCPU), 10.0), std::invalid_argument);
}
