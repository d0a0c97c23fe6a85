// The resnet model's `stem_pad_channels` and `downsample_bn_cudnn` on the CPU: declared (with
// their allowed values, out of the configuration hash at their defaults), and the same numbers
// as the plain model: zero-padding the stem's input and weight adds exact zeros to each sum, and
// the downsample batch-norm falls back to the module's forward where cuDNN is not (CPU). The
// CUDA paths are compared in tests/gpu/fused_bn_gpu_test.cpp ("[downsample_bn]").
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "fused_bn.h"
#include "integration/test_support.h"
#include "resnet.h"

using namespace orch;

namespace {

std::shared_ptr<Model> make_resnet(std::map<std::string, Value> params) {
  params.emplace("fused_bn", true);
  return test::built_plugins().create_model(test::choice("resnet", params), {10, {3, 32, 32}});
}

const ParamSpec* find_param(const std::string& name) {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "resnet");
  REQUIRE(info != nullptr);
  for (const auto& p : info->params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

/// Loss and gradients of one forward + backward.
struct Step {
  torch::Tensor logits;
  torch::OrderedDict<std::string, torch::Tensor> params;
};

Step step(Model& m, const torch::Tensor& images, const torch::Tensor& labels) {
  m.module().train();
  auto logits = m.forward(images);
  torch::nn::functional::cross_entropy(logits, labels).backward();
  return {logits.detach(), m.module().named_parameters()};
}

}  // namespace

TEST_CASE("resnet declares stem_pad_channels (0, 4, 8) and downsample_bn_cudnn, off and "
          "unhashed by default",
          "[resnet][stem_pad]") {
  const ParamSpec* pad = find_param("stem_pad_channels");
  REQUIRE(pad != nullptr);
  CHECK(pad->type == ParamType::kInt);
  CHECK(std::get<std::int64_t>(pad->default_value) == 0);
  REQUIRE(pad->allowed.size() == 3);
  CHECK(std::get<std::int64_t>(pad->allowed[1]) == 4);
  CHECK(std::get<std::int64_t>(pad->allowed[2]) == 8);
  CHECK_FALSE(pad->hashed_at_default);
  const ParamSpec* ds = find_param("downsample_bn_cudnn");
  REQUIRE(ds != nullptr);
  CHECK(ds->type == ParamType::kBool);
  CHECK(std::get<bool>(ds->default_value) == false);
  CHECK_FALSE(ds->hashed_at_default);
}

TEST_CASE("stem_pad_channels computes the unpadded stem's outputs and gradients",
          "[resnet][stem_pad]") {
  for (const bool channels_last : {false, true}) {
    for (const std::int64_t pad : {4, 8}) {
      INFO("stem_pad_channels " << pad << (channels_last ? ", channels-last" : ", contiguous"));
      torch::manual_seed(11);
      auto plain = make_resnet({{"depth", std::int64_t{18}}});
      auto padded = make_resnet({{"depth", std::int64_t{18}}, {"stem_pad_channels", pad}});
      test::copy_state(plain->module(), padded->module());
      auto images = torch::randn({2, 3, 32, 32});
      if (channels_last) images = images.contiguous(torch::MemoryFormat::ChannelsLast);
      const auto labels = torch::randint(0, 10, {2}, torch::kLong);
      const Step a = step(*plain, images, labels);
      const Step b = step(*padded, images, labels);
      // The same products summed with zeros in between: equal up to summation order.
      CHECK(torch::allclose(a.logits, b.logits, 1e-5, 1e-5));
      for (const auto& p : b.params) {
        INFO(p.key());
        REQUIRE(p.value().sizes() == a.params[p.key()].sizes());  // the weight stays 3-channel
        CHECK(torch::allclose(p.value().grad(), a.params[p.key()].grad(), 1e-4, 1e-5));
      }
    }
  }
}

TEST_CASE("stem_pad_channels below the input's channels leaves the stem as it is",
          "[resnet][stem_pad]") {
  auto m = test::built_plugins().create_model(
      test::choice("resnet", {{"depth", std::int64_t{18}}, {"stem_pad_channels", std::int64_t{4}}}),
      {10, {5, 32, 32}});  // 5-channel input: nothing to pad to 4
  auto logits = m->forward(torch::randn({2, 5, 32, 32}));
  CHECK(logits.sizes() == torch::IntArrayRef({2, 10}));
}

TEST_CASE("downsample_bn_cudnn on the CPU runs the module's batch-norm, counted",
          "[resnet][downsample_bn]") {
  // The model built here, not through the plugin: the counters are this binary's copy's.
  torch::manual_seed(12);
  resnet::ResNetOptions o;
  o.depth = 50;
  o.num_classes = 10;
  o.fused_bn = true;
  resnet::ResNet plain(o);
  o.downsample_bn_cudnn = true;
  resnet::ResNet ds(o);
  test::copy_state(*plain, *ds);
  plain->train();
  ds->train();
  const auto images = torch::randn({2, 3, 32, 32});
  const auto labels = torch::randint(0, 10, {2}, torch::kLong);
  const auto la = torch::nn::functional::cross_entropy(plain->forward(images), labels);
  la.backward();
  const auto before = resnet::fused_bn_counters();
  const auto lb = torch::nn::functional::cross_entropy(ds->forward(images), labels);
  lb.backward();
  const auto after = resnet::fused_bn_counters();
  CHECK(after.plain_module - before.plain_module == 4);  // ResNet50's four downsample branches
  CHECK(after.plain_cudnn == before.plain_cudnn);
  CHECK(torch::equal(la, lb));
  auto grads = plain->named_parameters();
  for (const auto& p : ds->named_parameters()) {
    INFO(p.key());
    CHECK(torch::equal(p.value().grad(), grads[p.key()].grad()));
  }
  auto buffers = ds->named_buffers();
  CHECK(buffers["layer1.0.downsample.1.num_batches_tracked"].item<std::int64_t>() == 1);
}

TEST_CASE("stem_pad_channels outside 0, 4, 8 is refused with the allowed values",
          "[resnet][stem_pad]") {
  const test::TempDir dir;
  const auto path = dir.path() / "bad-stem-pad.yaml";
  std::ofstream(path) << "name: bad\n"
                         "base:\n"
                         "  model: {plugin: resnet, depth: 18, stem_pad_channels: 6}\n"
                         "  data: {plugin: synthetic, image_size: 32}\n"
                         "  device: cpu\n";
  const auto r = test::run_orch("plan '" + path.string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Matchers::Contains("bad-stem-pad.yaml:3:"));
  CHECK_THAT(r.output, Catch::Matchers::Contains("stem_pad_channels"));
  CHECK_THAT(r.output, Catch::Matchers::Contains("0, 4, 8"));
}
