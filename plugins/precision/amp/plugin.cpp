// The `amp` precision mode: automatic mixed precision. The forward pass runs under autocast
// (convolutions and matmuls in bf16 or fp16 on Tensor Cores, reductions and the loss in fp32);
// weights and optimizer state stay fp32. bf16 has fp32's exponent range and needs no loss
// scaling. fp16 does (small gradients underflow to zero), so it uses dynamic loss scaling with
// PyTorch GradScaler's rule (loss_scaler.h).
#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <orch/precision.h>
#include <torch/nn/functional/loss.h>

#include <optional>
#include <stdexcept>

#include "loss_scaler.h"
#include "plugin_schemas.h"

namespace orch::amp {
namespace {

/// Enters autocast for one device type and restores the previous state on exit, like
/// Python's `with torch.autocast(...)`.
class AutocastScope {
 public:
  AutocastScope(at::DeviceType type, at::ScalarType dtype)
      : type_(type),
        was_enabled_(at::autocast::is_autocast_enabled(type)),
        old_dtype_(at::autocast::get_autocast_dtype(type)) {
    at::autocast::set_autocast_enabled(type_, true);
    at::autocast::set_autocast_dtype(type_, dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    // Leaving the outermost scope drops the casted-weight cache, as Python does.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(type_, was_enabled_);
    at::autocast::set_autocast_dtype(type_, old_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  at::DeviceType type_;
  bool was_enabled_;
  at::ScalarType old_dtype_;
};

class Amp final : public Precision {
 public:
  /// `scaling` is set for fp16 only.
  Amp(at::ScalarType dtype, torch::Device device, std::optional<LossScalerOptions> scaling)
      : dtype_(dtype), device_(device) {
    if (scaling) scaler_.emplace(device, *scaling);
  }
  void configure() override {
    // Autocast decides which ops run in low precision. For what stays fp32, PyTorch's defaults:
    // TF32 allowed for cuDNN convolutions, not for matmuls.
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setAllowTF32CuDNN(true);
  }
  torch::Tensor forward_loss(Model& model, const Batch& batch) override {
    AutocastScope scope(device_.type(), dtype_);
    auto logits = model.forward(batch.images);
    // cross_entropy is on autocast's fp32 list: the loss is computed in fp32.
    return torch::nn::functional::cross_entropy(logits, batch.labels);
  }
  void backward_step(const torch::Tensor& loss, StepOptimizer& opt) override {
    if (!scaler_) {
      loss.backward();
      opt.step();
      return;
    }
    scaler_->scale(loss).backward();
    scaler_->step(opt);
  }
  std::map<std::string, double> counters() const override {
    if (!scaler_) return {};
    // Read once, after the run: the counts stay on the device while it trains.
    return {{"skipped_steps", static_cast<double>(scaler_->skipped_steps())},
            {"loss_scale", scaler_->current_scale()}};
  }

 private:
  at::ScalarType dtype_;
  torch::Device device_;
  std::optional<LossScaler> scaler_;
};

class AmpPlugin final : public PrecisionPlugin {
 public:
  PluginInfo info() const override { return plugin_schemas::amp(); }
  std::unique_ptr<Precision> create(const Params& p, const PrecisionContext& ctx) const override {
    const auto& name = p.get_string("dtype");
    if (name == "bf16") return std::make_unique<Amp>(at::kBFloat16, ctx.device, std::nullopt);
    if (name != "fp16") throw std::invalid_argument("amp: unsupported dtype '" + name + "'");
    // GradScaler's growth and backoff factors, the scale's start and interval from the schema.
    LossScalerOptions scaling;
    scaling.init_scale = p.get_float("init_scale");
    scaling.growth_interval = p.get_int("growth_interval");
    return std::make_unique<Amp>(at::kHalf, ctx.device, scaling);
  }
};

}  // namespace
}  // namespace orch::amp

ORCH_PLUGIN(orch::amp::AmpPlugin)
