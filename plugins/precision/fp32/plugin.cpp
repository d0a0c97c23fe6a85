// The `fp32` precision mode: full float32 math. TF32 is switched off for matmul and cuDNN
// convolutions, so this is the true fp32 baseline the article's numbers start from.
#include <ATen/Context.h>
#include <orch/precision.h>
#include <torch/nn/functional/loss.h>

#include "plugin_schemas.h"

namespace orch::fp32 {
namespace {

class Fp32 final : public Precision {
 public:
  void configure() override {
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setAllowTF32CuDNN(false);
  }
  torch::Tensor forward_loss(Model& model, const Batch& batch) override {
    return torch::nn::functional::cross_entropy(model.forward(batch.images), batch.labels);
  }
  void backward_step(const torch::Tensor& loss, StepOptimizer& opt) override {
    loss.backward();
    opt.step();
  }
};

class Fp32Plugin final : public PrecisionPlugin {
 public:
  PluginInfo info() const override { return plugin_schemas::fp32(); }
  std::unique_ptr<Precision> create(const Params&, const PrecisionContext&) const override {
    return std::make_unique<Fp32>();
  }
};

}  // namespace
}  // namespace orch::fp32

ORCH_PLUGIN(orch::fp32::Fp32Plugin)
