// A TorchScript archive made by LibTorch, no Python needed: the `torchscript` model's tests
// (integration and GPU) train it through the real plugin.
#pragma once

#include <torch/script.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "integration/test_support.h"

namespace orch::test {

// A tiny conv net in TorchScript source: 3x3 conv (a 4-D weight, for channels-last) -> relu
// -> flatten -> linear (addmm: one op, which autocast casts as a whole). It counts its
// training-mode forwards in a buffer, so tests can see whether train()/eval() reached the
// module's `self.training`.
constexpr const char* kTinyNetSource = R"JIT(
def forward(self, x):
    if self.training:
        self.train_calls.add_(1)
    h = torch.relu(torch.conv2d(x, self.conv_weight, self.conv_bias, [1, 1], [1, 1]))
    return torch.addmm(self.fc_bias, torch.flatten(h, 1), self.fc_weight.t())
)JIT";

inline torch::jit::Module empty_module(const std::string& name) {
  torch::jit::Module m(name);
  // Python's nn.Module always has `training`; a module built in C++ must be given it.
  m.register_attribute("training", c10::BoolType::get(), true);
  return m;
}

/// TinyNet for C x S x S images and `classes` classes; the conv has 4 output channels.
inline torch::jit::Module tiny_net(std::int64_t channels, std::int64_t size, std::int64_t classes) {
  torch::manual_seed(1);
  torch::jit::Module m = empty_module("TinyNet");
  // requires_grad as nn.Parameter has it in Python; the archive keeps the flag.
  auto param = [](torch::Tensor t) { return t.requires_grad_(); };
  m.register_parameter("conv_weight", param(torch::randn({4, channels, 3, 3}) * 0.2), false);
  m.register_parameter("conv_bias", param(torch::zeros({4})), false);
  m.register_parameter("fc_weight", param(torch::randn({classes, 4 * size * size}) * 0.05), false);
  m.register_parameter("fc_bias", param(torch::zeros({classes})), false);
  m.register_buffer("train_calls", torch::zeros({}, torch::kLong));
  m.define(kTinyNetSource);
  return m;
}

/// Saves `m` as DIR/NAME (torch::jit::Module::save writes what torch.jit.save does).
inline std::string save(const torch::jit::Module& m, const TempDir& dir, const std::string& name) {
  const auto path = (dir.path() / name).string();
  m.save(path);
  return path;
}

/// The CPU run both suites train tiny_net(3, 8, 10) with: the archive at `path` on 8x8
/// synthetic images of 10 classes, SGD with momentum.
inline RunSpec tiny_net_spec(const std::string& path) {
  RunSpec spec = small_cpu_spec();
  spec.model = choice("torchscript", {{"path", path}});
  spec.data = choice("synthetic", {{"image_size", std::int64_t{8}},
                                   {"channels", std::int64_t{3}},
                                   {"classes", std::int64_t{10}},
                                   {"batches", std::int64_t{1}},
                                   {"location", std::string("device")}});
  spec.optimizer.lr = 0.1;
  spec.optimizer.momentum = 0.9;
  return spec;
}

}  // namespace orch::test
