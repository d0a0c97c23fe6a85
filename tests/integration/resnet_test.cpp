// The resnet model plugin against torchvision's numbers.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "integration/test_support.h"

using namespace orch;

namespace {

std::int64_t parameter_count(torch::nn::Module& m) {
  std::int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

}  // namespace

TEST_CASE("resnet parameter counts match torchvision", "[resnet]") {
  // torchvision.models.resnetXX(num_classes=1000): sum(p.numel() for p in m.parameters())
  const std::pair<std::int64_t, std::int64_t> expected[] = {
      {18, 11'689'512}, {34, 21'797'672}, {50, 25'557'032}, {101, 44'549'160}, {152, 60'192'808}};
  for (const auto& [depth, count] : expected) {
    auto model = test::built_plugins().create_model(test::choice("resnet", {{"depth", depth}}),
                                                    {1000, {3, 224, 224}});
    INFO("depth " << depth);
    CHECK(parameter_count(model->module()) == count);
  }
}

TEST_CASE("resnet50 uses torchvision's parameter names", "[resnet]") {
  auto model = test::built_plugins().create_model(
      test::choice("resnet", {{"depth", std::int64_t{50}}}), {1000, {3, 224, 224}});
  auto named = model->module().named_parameters();
  CHECK(named.contains("conv1.weight"));
  CHECK(named.contains("layer1.0.downsample.0.weight"));
  CHECK(named.contains("layer4.2.bn3.bias"));
  CHECK(named.contains("fc.weight"));
  CHECK(named["fc.weight"].sizes() == torch::IntArrayRef({1000, 2048}));
  CHECK(model->module().named_buffers().contains("layer3.5.bn2.running_var"));
}

TEST_CASE("resnet50 maps a 224x224 batch to class logits", "[resnet]") {
  auto model = test::built_plugins().create_model(
      test::choice("resnet", {{"depth", std::int64_t{50}}}), {1000, {3, 224, 224}});
  torch::NoGradGuard no_grad;
  model->module().eval();
  auto out = model->forward(torch::randn({2, 3, 224, 224}));
  CHECK(out.sizes() == torch::IntArrayRef({2, 1000}));
  CHECK(torch::isfinite(out).all().item<bool>());
}
