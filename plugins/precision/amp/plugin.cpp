// The `amp` precision mode: automatic mixed precision. The forward pass runs under autocast
// (convolutions and matmuls in bf16 on Tensor Cores, reductions and the loss in fp32), weights
// and optimizer state stay fp32. bf16 has fp32's exponent range, so it needs no loss scaling;
// fp16 with dynamic loss scaling comes with the GradScaler rule in a later version.
#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <orch/precision.h>
#include <torch/nn/functional/loss.h>

#include <stdexcept>

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
  Amp(at::ScalarType dtype, torch::Device device) : dtype_(dtype), device_(device) {}
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
  bool backward_step(const torch::Tensor& loss, torch::optim::Optimizer& opt) override {
    loss.backward();
    opt.step();
    return true;
  }

 private:
  at::ScalarType dtype_;
  torch::Device device_;
};

class AmpPlugin final : public PrecisionPlugin {
 public:
  PluginInfo info() const override {
    return {"amp", PluginKind::kPrecision, "1.0.0",
            "automatic mixed precision: autocast forward, fp32 weights",
            {{"dtype", ParamType::kString, std::string("bf16"), {std::string("bf16")}, {}, {},
              "low-precision type used inside autocast"}}};
  }
  std::unique_ptr<Precision> create(const Params& p, const PrecisionContext& ctx) const override {
    const auto& name = p.get_string("dtype");
    if (name != "bf16") throw std::invalid_argument("amp: unsupported dtype '" + name + "'");
    return std::make_unique<Amp>(at::kBFloat16, ctx.device);
  }
};

}  // namespace
}  // namespace orch::amp

ORCH_PLUGIN(orch::amp::AmpPlugin)
