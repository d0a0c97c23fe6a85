// weight_grad_on_second_stream (wgrad_stream.h): one second stream per device, taken once from
// PyTorch's pool; events order it after the caller's stream and the caller's stream after it.
#include "wgrad_stream.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/graph_task.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

namespace orch::resnet {
namespace {

thread_local bool t_enabled = false;
std::atomic<std::int64_t> g_launched{0};
std::atomic<std::int64_t> g_joined{0};

/// Per device: its second stream, and the backward whose join is queued with the streams that
/// must wait for it (a backward's nodes run on their forwards' streams, usually one).
struct DeviceState {
  c10::cuda::CUDAStream side;
  int joined_task = -1;
  std::vector<c10::cuda::CUDAStream> waiting;
};

std::mutex g_mu;
std::map<c10::DeviceIndex, DeviceState>& devices() {
  static std::map<c10::DeviceIndex, DeviceState> all;
  return all;
}

/// Under g_mu: the device's state, its stream taken from the pool on first use (the pool hands
/// out its streams in turn, so a stream is taken once and kept).
DeviceState& state_of(c10::DeviceIndex device) {
  auto it = devices().find(device);
  if (it == devices().end())
    it = devices()
             .emplace(device, DeviceState{c10::cuda::getStreamFromPool(false, device), -1, {}})
             .first;
  return it->second;
}

/// Run by the engine when the backward ends: every stream that launched a weight gradient in
/// it, and the stream the engine runs final callbacks on (backward()'s caller's), wait for
/// the second stream's work so far.
void join(c10::DeviceIndex device) {
  std::vector<c10::cuda::CUDAStream> waiting;
  c10::cuda::CUDAStream side = c10::cuda::getCurrentCUDAStream(device);
  {
    const std::lock_guard<std::mutex> lock(g_mu);
    DeviceState& s = state_of(device);
    side = s.side;
    waiting.swap(s.waiting);
  }
  const auto current = c10::cuda::getCurrentCUDAStream(device);
  if (std::find(waiting.begin(), waiting.end(), current) == waiting.end())
    waiting.push_back(current);
  at::cuda::CUDAEvent done;
  done.record(side);
  for (const auto& stream : waiting) done.block(stream);
  ++g_joined;
}

/// Queues join(device) once per backward (engine's graph task), remembering `caller`.
void queue_join(c10::DeviceIndex device, const c10::cuda::CUDAStream& caller) {
  const int task = torch::autograd::get_current_graph_task_id();
  bool queue = false;
  {
    const std::lock_guard<std::mutex> lock(g_mu);
    DeviceState& s = state_of(device);
    if (std::find(s.waiting.begin(), s.waiting.end(), caller) == s.waiting.end())
      s.waiting.push_back(caller);
    if (s.joined_task != task) {
      s.joined_task = task;
      queue = true;
    }
  }
  if (queue)
    torch::autograd::Engine::get_default_engine().queue_callback([device] { join(device); });
}

}  // namespace

WgradStreamScope::WgradStreamScope(bool enabled) : previous_(t_enabled) { t_enabled = enabled; }
WgradStreamScope::~WgradStreamScope() { t_enabled = previous_; }
bool wgrad_stream_enabled() { return t_enabled; }

void weight_grad_on_second_stream(const torch::Tensor& dy, const torch::Tensor& x,
                                  const torch::Tensor& w, const torch::Tensor& weight,
                                  std::int64_t stride, std::int64_t padding) {
  TORCH_CHECK(x.is_cuda(), "weight_grad_on_second_stream: CUDA tensors only");
  const c10::DeviceIndex device = x.get_device();
  const auto caller = c10::cuda::getCurrentCUDAStream(device);
  c10::cuda::CUDAStream side = caller;
  {
    const std::lock_guard<std::mutex> lock(g_mu);
    side = state_of(device).side;
  }
  at::cuda::CUDAEvent ready;
  ready.record(caller);
  ready.block(side);
  {
    const c10::cuda::CUDAStreamGuard guard(side);
    const std::array<bool, 3> mask = {false, true, false};
    const auto dw =
        std::get<1>(at::convolution_backward(dy, x, w, std::nullopt, {stride, stride},
                                             {padding, padding}, {1, 1}, false, {0, 0}, 1, mask));
    at::Tensor& grad = weight.mutable_grad();
    if (grad.defined()) {
      grad.add_(dw);
    } else {
      // The parameter's own layout, as AccumulateGrad gives a fresh gradient.
      grad = at::empty_like(weight, at::MemoryFormat::Preserve);
      grad.copy_(dw);
    }
  }
  // Made on the caller's stream, read on the second: not reused before the second is done.
  dy.record_stream(side);
  x.record_stream(side);
  w.record_stream(side);
  ++g_launched;
  queue_join(device, caller);
}

WgradStreamCounters wgrad_stream_counters() { return {g_launched.load(), g_joined.load()}; }

}  // namespace orch::resnet
