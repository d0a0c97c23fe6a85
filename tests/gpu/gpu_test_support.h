// Helpers shared by the GPU test files: an autocast scope and channels-last parameters.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

namespace orch::test {

/// An autocast scope for CUDA, restored on exit.
class Autocast {
 public:
  explicit Autocast(torch::ScalarType dtype)
      : was_(at::autocast::is_autocast_enabled(at::kCUDA)),
        old_(at::autocast::get_autocast_dtype(at::kCUDA)) {
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    at::autocast::set_autocast_dtype(at::kCUDA, dtype);
  }
  ~Autocast() {
    at::autocast::set_autocast_enabled(at::kCUDA, was_);
    at::autocast::set_autocast_dtype(at::kCUDA, old_);
    at::autocast::clear_cache();
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool was_;
  torch::ScalarType old_;
};

/// Makes a module's 4-d parameters (convolution weights) channels-last, as the runner does.
inline void to_channels_last(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
  }
}

}  // namespace orch::test
