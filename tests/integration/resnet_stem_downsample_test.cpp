// The resnet model's `stem_conv` and `downsample_bn_cudnn` on the CPU: declared (with their
// allowed values, out of the configuration hash at their defaults), and the same numbers as the
// plain model: padding the stem's input and weight adds exact zeros to each sum, space_to_depth
// regroups the same products (odd sizes included), and the downsample batch-norm falls back to
// the module's forward where cuDNN is not (CPU). The CUDA paths are compared in
// tests/gpu/fused_bn_gpu_test.cpp ("[downsample_bn]").
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

TEST_CASE("resnet declares stem_conv (auto) and downsample_bn_cudnn (on), unhashed by default",
          "[resnet][stem_conv]") {
  const ParamSpec* stem = find_param("stem_conv");
  REQUIRE(stem != nullptr);
  CHECK(stem->type == ParamType::kString);
  // auto and on since they measured faster (plugin.cpp, stem_conv.h)
  CHECK(std::get<std::string>(stem->default_value) == "auto");
  REQUIRE(stem->allowed.size() == 5);
  for (const auto& v : stem->allowed) {
    const auto& name = std::get<std::string>(v);
    CHECK(std::string(resnet::to_string(resnet::stem_conv_from_string(name))) == name);
  }
  CHECK(stem->hash_exempt_at_default());
  CHECK_THROWS_WITH(
      resnet::stem_conv_from_string("s2d"),
      Catch::Matchers::Contains("not one of auto, direct, pad4, pad8, space_to_depth"));
  const ParamSpec* ds = find_param("downsample_bn_cudnn");
  REQUIRE(ds != nullptr);
  CHECK(ds->type == ParamType::kBool);
  CHECK(std::get<bool>(ds->default_value) == true);
  CHECK(ds->hash_exempt_at_default());
}

TEST_CASE("stem_conv auto is space_to_depth for bf16 and direct otherwise", "[resnet][stem_conv]") {
  using resnet::StemConv;
  const auto f32 = torch::zeros({1, 3, 8, 8});
  CHECK(resnet::resolve_stem_conv(StemConv::kAuto, f32) == StemConv::kDirect);
  CHECK(resnet::resolve_stem_conv(StemConv::kAuto, f32.to(torch::kBFloat16)) ==
        StemConv::kSpaceToDepth);
  CHECK(resnet::resolve_stem_conv(StemConv::kAuto, f32.to(torch::kHalf)) == StemConv::kDirect);
  CHECK(resnet::resolve_stem_conv(StemConv::kPad4, f32.to(torch::kBFloat16)) == StemConv::kPad4);
  CHECK(resnet::resolve_stem_conv(StemConv::kDirect, f32.to(torch::kBFloat16)) ==
        StemConv::kDirect);
}

TEST_CASE("space_to_depth is the stem's strided 7x7 convolution, odd sizes included",
          "[resnet][stem_conv]") {
  torch::manual_seed(13);
  const auto w = torch::randn({8, 3, 7, 7}, torch::kDouble);
  for (const auto& hw :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{224, 224}, {32, 32}, {33, 31}, {7, 8}}) {
    INFO(hw.first << "x" << hw.second);
    const auto x = torch::randn({2, 3, hw.first, hw.second}, torch::kDouble);
    using Ints = std::vector<std::int64_t>;
    const auto direct = at::conv2d(x, w, {}, Ints{2, 2}, Ints{3, 3});
    const auto folded = at::conv2d(resnet::space_to_depth_input(x),
                                   resnet::space_to_depth_weight(w), {}, Ints{1, 1}, Ints{0, 0});
    REQUIRE(folded.sizes() == direct.sizes());
    CHECK(torch::allclose(folded, direct, 1e-12, 1e-12));  // doubles: the same sums
  }
  CHECK(resnet::space_to_depth_input(torch::zeros({1, 3, 224, 224})).size(1) == 16);
  CHECK(resnet::space_to_depth_weight(torch::zeros({64, 3, 7, 7})).sizes() ==
        torch::IntArrayRef({64, 16, 4, 4}));
}

TEST_CASE("every stem_conv computes the direct stem's outputs and gradients",
          "[resnet][stem_conv]") {
  for (const bool channels_last : {false, true}) {
    for (const std::string how : {"pad4", "pad8", "space_to_depth"}) {
      INFO("stem_conv " << how << (channels_last ? ", channels-last" : ", contiguous"));
      torch::manual_seed(11);
      auto plain = make_resnet({{"depth", std::int64_t{18}}, {"stem_conv", std::string("direct")}});
      auto other = make_resnet({{"depth", std::int64_t{18}}, {"stem_conv", how}});
      test::copy_state(plain->module(), other->module());
      // Batch 8 at 64x64: layer4's batch-norms see 32 values a channel. At batch 2 and 32x32
      // they see 2, and normalising two nearly equal values amplifies the last bit of a
      // reordered sum into the logits' third digit.
      auto images = torch::randn({8, 3, 64, 64});
      if (channels_last) images = images.contiguous(torch::MemoryFormat::ChannelsLast);
      const auto labels = torch::randint(0, 10, {8}, torch::kLong);
      {
        torch::NoGradGuard no_grad;
        auto* net = plain->module().as<resnet::ResNetImpl>();
        REQUIRE(net != nullptr);
        const auto d = net->conv1->forward(images);
        const auto f =
            resnet::stem_conv_forward(*net->conv1, images, resnet::stem_conv_from_string(how));
        INFO("max |stem difference| " << (d - f).abs().max().item<double>() << " of "
                                      << d.abs().max().item<double>());
        CHECK(torch::allclose(d, f, 1e-5, 1e-5));
      }
      const Step a = step(*plain, images, labels);
      const Step b = step(*other, images, labels);
      // The same products summed in another order.
      INFO("max |logits difference| " << (a.logits - b.logits).abs().max().item<double>());
      CHECK(torch::allclose(a.logits, b.logits, 1e-4, 1e-5));
      for (const auto& p : b.params) {
        INFO(p.key());
        REQUIRE(p.value().sizes() == a.params[p.key()].sizes());  // the weight stays 3x7x7
        CHECK(torch::allclose(p.value().grad(), a.params[p.key()].grad(), 1e-3, 1e-5));
      }
    }
  }
}

TEST_CASE("stem_conv pad4 with more input channels than 4 leaves the stem as it is",
          "[resnet][stem_conv]") {
  auto m = test::built_plugins().create_model(
      test::choice("resnet", {{"depth", std::int64_t{18}}, {"stem_conv", std::string("pad4")}}),
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

TEST_CASE("a stem_conv that is not one of its values is refused with the allowed values",
          "[resnet][stem_conv]") {
  const test::TempDir dir;
  const auto path = dir.path() / "bad-stem-conv.yaml";
  std::ofstream(path) << "name: bad\n"
                         "base:\n"
                         "  model: {plugin: resnet, depth: 18, stem_conv: s2d}\n"
                         "  data: {plugin: synthetic, image_size: 32}\n"
                         "  device: cpu\n";
  const auto r = test::run_orch("plan '" + path.string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Matchers::Contains("bad-stem-conv.yaml:3:"));
  CHECK_THAT(r.output, Catch::Matchers::Contains("stem_conv"));
  CHECK_THAT(r.output, Catch::Matchers::Contains("space_to_depth"));
}
