#include "runner/busy_gpu.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "runner/gpu_time.h"

namespace orch {

struct BusyGpu::State {
  c10::Device device;
  c10::cuda::CUDAStream stream;
  torch::Tensor a, b, c;
  at::cuda::CUDAGraph graph;
  State(c10::Device d, c10::cuda::CUDAStream s) : device(d), stream(s) {}
};

namespace {

// Square bf16 products: large enough to fill a large GPU's SMs, short enough (a fraction of a
// millisecond on a Hopper GPU) that a replay is a few hundred kernels, as a ResNet50 step is.
constexpr std::int64_t kSide = 4096;

}  // namespace

BusyGpu::BusyGpu(c10::Device device, double step_ms) {
  if (!device.is_cuda())
    throw std::invalid_argument("a busy GPU needs a CUDA device, not " + device.str());
  if (!(step_ms > 0)) throw std::invalid_argument("the busy GPU's step must be longer than 0 ms");
  const c10::DeviceIndex index = device.has_index() ? device.index() : c10::cuda::current_device();
  c10::cuda::CUDAGuard guard(index);
  s_ = std::make_unique<State>(c10::Device(c10::kCUDA, index),
                               c10::cuda::getStreamFromPool(false, index));
  c10::cuda::CUDAStreamGuard on(s_->stream);
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(s_->device);
  s_->a = torch::randn({kSide, kSide}, bf16);
  s_->b = torch::randn({kSide, kSide}, bf16);
  s_->c = torch::empty({kSide, kSide}, bf16);
  const auto product = [this] { at::matmul_out(s_->c, s_->a, s_->b); };
  gpu_time_ms(3, product);  // cuBLAS picks its kernel and workspace before anything is timed
  const double one = gpu_time_ms(10, product) / 10.0;
  products_ = std::max<std::int64_t>(1, std::llround(step_ms / std::max(one, 1e-3)));
  try {
    // Thread-local capture: a loader's threads may already be making CUDA calls.
    s_->graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    for (std::int64_t i = 0; i < products_; ++i) product();
    s_->graph.capture_end();
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the busy GPU's graph capture failed: ") + e.what());
  }
  s_->graph.replay();  // the first replay uploads the graph; time a later one
  replay_ms_ = gpu_time_ms(1, [this] { s_->graph.replay(); });
  thread_ = std::thread([this] { loop(); });
}

BusyGpu::~BusyGpu() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  s_->stream.synchronize();
}

void BusyGpu::loop() {
  c10::cuda::CUDAGuard guard(s_->device.index());
  c10::cuda::CUDAStreamGuard on(s_->stream);
  // Two replays in flight at most: replay i is queued once replay i - 2 has finished.
  at::cuda::CUDAEvent done[2];
  for (std::int64_t i = 0; !stop_.load(); ++i) {
    if (i >= 2) {
      done[i % 2].synchronize();
      ++replays_;
    }
    s_->graph.replay();
    done[i % 2].record(s_->stream);
  }
}

}  // namespace orch
