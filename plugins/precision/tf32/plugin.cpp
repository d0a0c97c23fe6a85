// The `tf32` precision mode: fp32 storage and fp32 code, with TF32 Tensor Core math allowed for
// cuBLAS matmuls and cuDNN convolutions (10-bit mantissa inputs, fp32 accumulation). It is the
// "enable TF32" tip on its own: what Ampere and later GPUs give fp32 code without autocast.
// Nothing changes on the CPU.
#include <ATen/Context.h>
#include <orch/precision.h>
#include <torch/nn/functional/loss.h>

#include "plugin_schemas.h"

namespace orch::tf32 {
namespace {

class Tf32 final : public Precision {
 public:
  void configure() override {
    // Both flags are set, since a run before this one (fp32, amp) may have changed either.
    at::globalContext().setAllowTF32CuBLAS(true);
    at::globalContext().setAllowTF32CuDNN(true);
  }
  torch::Tensor forward_loss(Model& model, const Batch& batch) override {
    return torch::nn::functional::cross_entropy(model.forward(batch.images), batch.labels);
  }
  void backward_step(const torch::Tensor& loss, StepOptimizer& opt) override {
    loss.backward();
    opt.step();
  }
};

class Tf32Plugin final : public PrecisionPlugin {
 public:
  PluginInfo info() const override { return plugin_schemas::tf32(); }
  std::unique_ptr<Precision> create(const Params&, const PrecisionContext&) const override {
    return std::make_unique<Tf32>();
  }
};

}  // namespace
}  // namespace orch::tf32

ORCH_PLUGIN(orch::tf32::Tf32Plugin)
