// SGD with momentum and weight decay (torch.optim.SGD's update, dampening 0, no Nesterov), in
// three implementations that compute the same numbers with different kernel counts:
//   loop:    LibTorch's torch::optim::SGD, one chain of kernels per parameter tensor.
//   foreach: multi-tensor ops (at::_foreach_*), a few launches for all tensors together; what
//            torch.optim.SGD uses by default on CUDA. Mirrors PyTorch's _multi_tensor_sgd.
//   fused:   ATen's at::_fused_sgd_, one multi-tensor kernel for the whole update, which can
//            also unscale and skip on the device. LibTorch 2.11 has it for CUDA and the CPU.
//
// The update, for each parameter p with gradient g:
//   g = g + weight_decay * p
//   buf = g                          (first step: the buffer starts as the gradient)
//   buf = momentum * buf + g         (later steps)
//   p = p - lr * buf
#include "runner/sgd.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_fused_sgd.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include <stdexcept>

namespace orch {
namespace {

void refuse_device_unscale(const char* impl, const std::optional<torch::Tensor>& grad_scale,
                           const std::optional<torch::Tensor>& found_inf) {
  if (grad_scale || found_inf) {
    throw std::invalid_argument(std::string("the ") + impl +
                                " SGD cannot unscale or skip on the device; use "
                                "optimizer.impl: fused");
  }
}

// zero_grad(set_to_none=True): the next backward allocates fresh gradients instead of
// accumulating into (and first zeroing) the old ones.
void set_grads_to_none(std::vector<torch::Tensor>& params) {
  for (auto& p : params) p.mutable_grad().reset();
}

class LoopSgd final : public StepOptimizer {
 public:
  LoopSgd(const OptimizerSpec& s, std::vector<torch::Tensor> params)
      : params_(std::move(params)),
        sgd_(params_,
             torch::optim::SGDOptions(s.lr).momentum(s.momentum).weight_decay(s.weight_decay)) {}
  const std::vector<torch::Tensor>& params() const override { return params_; }
  void zero_grad() override { sgd_.zero_grad(/*set_to_none=*/true); }
  void step(const std::optional<torch::Tensor>& grad_scale,
            const std::optional<torch::Tensor>& found_inf) override {
    refuse_device_unscale("loop", grad_scale, found_inf);
    sgd_.step();
  }
  bool supports_device_unscale() const override { return false; }

 private:
  std::vector<torch::Tensor> params_;
  torch::optim::SGD sgd_;
};

// What the foreach and fused implementations share: the hyper-parameters, the parameter list
// and one momentum buffer per parameter (created lazily, undefined until first used).
class MultiTensorSgd : public StepOptimizer {
 public:
  MultiTensorSgd(const OptimizerSpec& s, std::vector<torch::Tensor> params)
      : params_(std::move(params)),
        lr_(s.lr),
        momentum_(s.momentum),
        weight_decay_(s.weight_decay),
        buffers_(params_.size()) {}
  const std::vector<torch::Tensor>& params() const override { return params_; }
  void zero_grad() override { set_grads_to_none(params_); }

 protected:
  std::vector<torch::Tensor> params_;
  double lr_, momentum_, weight_decay_;
  std::vector<torch::Tensor> buffers_;
};

class ForeachSgd final : public MultiTensorSgd {
 public:
  using MultiTensorSgd::MultiTensorSgd;
  bool supports_device_unscale() const override { return false; }

  void step(const std::optional<torch::Tensor>& grad_scale,
            const std::optional<torch::Tensor>& found_inf) override {
    refuse_device_unscale("foreach", grad_scale, found_inf);
    torch::NoGradGuard no_grad;
    // Like PyTorch, parameters without a gradient take no step (and keep their buffer).
    std::vector<torch::Tensor> params, grads;
    std::vector<std::size_t> index;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const auto& g = params_[i].grad();
      if (!g.defined()) continue;
      params.push_back(params_[i]);
      grads.push_back(g);
      index.push_back(i);
    }
    if (params.empty()) return;
    // Out of place, so .grad() keeps the gradient as backward left it.
    if (weight_decay_ != 0) grads = at::_foreach_add(grads, params, weight_decay_);
    if (momentum_ != 0) {
      std::vector<torch::Tensor> bufs;
      bufs.reserve(index.size());
      bool all_have_buffers = true;
      for (std::size_t i : index) {
        if (!buffers_[i].defined()) {
          all_have_buffers = false;
          break;
        }
        bufs.push_back(buffers_[i]);
      }
      if (all_have_buffers) {
        at::_foreach_mul_(bufs, momentum_);
        at::_foreach_add_(bufs, grads, /*alpha=*/1.0);  // 1 - dampening
      } else {
        // The first step (or a parameter seen for the first time): a new buffer is a copy of
        // the gradient, as in PyTorch, so the first update is exactly lr * g.
        bufs.clear();
        for (std::size_t k = 0; k < index.size(); ++k) {
          auto& buf = buffers_[index[k]];
          if (!buf.defined()) {
            buf = grads[k].detach().clone();
          } else {
            buf.mul_(momentum_).add_(grads[k]);
          }
          bufs.push_back(buf);
        }
      }
      grads = std::move(bufs);
    }
    at::_foreach_add_(params, grads, -lr_);
  }
};

class FusedSgd final : public MultiTensorSgd {
 public:
  using MultiTensorSgd::MultiTensorSgd;
  bool supports_device_unscale() const override { return true; }

  void step(const std::optional<torch::Tensor>& grad_scale,
            const std::optional<torch::Tensor>& found_inf) override {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> params, grads, bufs;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const auto& g = params_[i].grad();
      if (!g.defined()) continue;
      params.push_back(params_[i]);
      grads.push_back(g);
      if (momentum_ != 0) {
        // Buffers start at zero and the kernel always runs its "later step" branch:
        // 0 * momentum + g is exactly g, so the first update equals PyTorch's (which copies the
        // gradient into an uninitialised buffer when is_first_step is true). Unlike that, a
        // first step skipped through found_inf leaves a valid (zero) buffer behind.
        if (!buffers_[i].defined()) buffers_[i] = torch::zeros_like(params_[i]);
        bufs.push_back(buffers_[i]);
      }
    }
    if (params.empty()) return;
    // With momentum 0 the kernel wants no buffer list at all.
    at::_fused_sgd_(params, grads, bufs, weight_decay_, momentum_, lr_, /*dampening=*/0.0,
                    /*nesterov=*/false, /*maximize=*/false, /*is_first_step=*/false, grad_scale,
                    found_inf);
  }
};

}  // namespace

std::unique_ptr<StepOptimizer> make_optimizer(const OptimizerSpec& spec,
                                              std::vector<torch::Tensor> params) {
  if (spec.name != "sgd") throw std::invalid_argument("unknown optimizer '" + spec.name + "'");
  if (spec.impl == "loop") return std::make_unique<LoopSgd>(spec, std::move(params));
  if (spec.impl == "foreach") return std::make_unique<ForeachSgd>(spec, std::move(params));
  if (spec.impl == "fused") return std::make_unique<FusedSgd>(spec, std::move(params));
  throw std::invalid_argument("unknown optimizer.impl '" + spec.impl +
                              "' (allowed: loop, foreach, fused)");
}

}  // namespace orch
