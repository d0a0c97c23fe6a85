// A TorchScript module (torch.jit.save from Python) as a torch::nn::Module, so the host trains
// it exactly like a built-in model: moves it to the device, converts it to channels-last, builds
// the optimizer from parameters() and switches train/eval mode.
//
// The wrapper registers the TorchScript module's own parameter and buffer tensors (the same
// TensorImpls, not copies) under a mirror of its submodule tree, so parameter names are the
// Python ones ("layer1.0.conv1.weight"). nn::Module::to() and the host's channels-last
// conversion replace each tensor's data in place (Tensor::set_data), which the TorchScript
// module sees too, since both hold the same tensor.
#pragma once

#include <torch/nn/module.h>
#include <torch/script.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace orch::torchscript {

class JitModule : public torch::nn::Module {
 public:
  /// `label` names the model in every error (the archive's path).
  JitModule(torch::jit::Module module, std::string label);

  /// Also switches the TorchScript module, whose `self.training` its code reads.
  void train(bool on = true) override;

  /// images: N x C x H x W; the module's forward must return one tensor. Errors name the model.
  torch::Tensor forward(const torch::Tensor& images);

  const torch::jit::Module& jit() const { return jit_; }
  const std::string& label() const { return label_; }

 private:
  torch::jit::Module jit_;
  std::string label_;
};

/// Loads `path` with torch::jit::load onto the CPU, with errors that say what is wrong: no such
/// file, not a TorchScript archive, no trainable parameters.
torch::jit::Module load_archive(const std::filesystem::path& path);

/// Runs one forward pass of a batch of 2 zeros of `input_shape` (C x H x W) in training mode,
/// without autograd and without the graph executor's optimisations (so the profiling executor
/// is left to profile the real steps on the real device), and checks the output is 2 x
/// `num_classes` logits. Buffers (BatchNorm statistics) are restored afterwards. Throws a
/// sentence naming the shape that was tried and the module's own error.
void check_forward(JitModule& model, const std::vector<std::int64_t>& input_shape,
                   std::int64_t num_classes);

}  // namespace orch::torchscript
