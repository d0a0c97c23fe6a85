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
  PluginInfo info() const override {
    const LossScalerOptions defaults;
    return {"amp",
            PluginKind::kPrecision,
            "1.1.0",
            "automatic mixed precision: autocast forward, fp32 weights",
            {{"dtype",
              ParamType::kString,
              std::string("bf16"),
              {std::string("bf16"), std::string("fp16")},
              {},
              {},
              "low-precision type used inside autocast; fp16 adds dynamic loss scaling"},
             {"init_scale",
              ParamType::kFloat,
              defaults.init_scale,
              {},
              1.0,
              16777216.0,
              "fp16 only: the loss scale at the start (GradScaler's init_scale)"},
             {"growth_interval",
              ParamType::kInt,
              defaults.growth_interval,
              {},
              1.0,
              1000000.0,
              "fp16 only: clean steps in a row before the loss scale doubles"}}};
  }
  std::unique_ptr<Precision> create(const Params& p, const PrecisionContext& ctx) const override {
    const auto& name = p.get_string("dtype");
    if (name == "bf16") return std::make_unique<Amp>(at::kBFloat16, ctx.device, std::nullopt);
    if (name != "fp16") throw std::invalid_argument("amp: unsupported dtype '" + name + "'");
    // The planner always passes every declared parameter; a RunSpec built by hand may not.
    LossScalerOptions scaling;
    if (p.has("init_scale")) scaling.init_scale = p.get_float("init_scale");
    if (p.has("growth_interval")) scaling.growth_interval = p.get_int("growth_interval");
    return std::make_unique<Amp>(at::kHalf, ctx.device, scaling);
  }
};

}  // namespace
}  // namespace orch::amp

ORCH_PLUGIN(orch::amp::AmpPlugin)
