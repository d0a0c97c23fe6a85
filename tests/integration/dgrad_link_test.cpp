// The resnet option `dgrad_graph` where no GPU is needed: the parameter (off by default,
// unhashed off, its three values), the offer and claim between a batch-norm's output and the
// convolution that takes it, and a network with it on the CPU, where nothing is fused and so
// nothing is linked: the same numbers as without. The graph itself runs in
// tests/gpu/dgrad_link_gpu_test.cpp.
#include "dgrad_link.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <stdexcept>

#include "integration/test_support.h"
#include "resnet.h"

using namespace orch;

TEST_CASE("resnet declares dgrad_graph: off, auto, always; off by default and unhashed off",
          "[resnet][dgrad_graph]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "resnet");
  REQUIRE(info != nullptr);
  const ParamSpec* p = nullptr;
  for (const auto& s : info->params) {
    if (s.name == "dgrad_graph") p = &s;
  }
  REQUIRE(p != nullptr);
  CHECK(p->type == ParamType::kString);
  CHECK(std::get<std::string>(p->default_value) == "off");
  CHECK(p->hash_exempt_at_default());
  CHECK(p->allowed.size() == 3);
  for (const char* name : {"off", "auto", "always"})
    CHECK(resnet::to_string(resnet::dgrad_graph_mode_from_string(name)) == std::string(name));
  CHECK_THROWS_WITH(resnet::dgrad_graph_mode_from_string("on"),
                    "dgrad_graph 'on' is not one of off, auto, always");
}

TEST_CASE("a batch-norm's offer is claimed once, by the tensor offered, within its scope",
          "[resnet][dgrad_graph]") {
  const auto y = torch::ones({2, 4, 3, 3});
  const auto link = c10::make_intrusive<resnet::DgradLink>();
  {
    const resnet::DgradGraphScope scope(resnet::DgradGraphMode::kAuto);
    CHECK(resnet::dgrad_graph_mode() == resnet::DgradGraphMode::kAuto);
    resnet::offer_dgrad_link(y, link);
    // Another tensor, even with the same values and a view of the same storage, is not it.
    CHECK_FALSE(resnet::claim_dgrad_link(y.clone()));
    CHECK_FALSE(resnet::claim_dgrad_link(y.view({2, 4, 9})));
    CHECK(resnet::claim_dgrad_link(y).get() == link.get());
    CHECK_FALSE(resnet::claim_dgrad_link(y));  // claimed already
    resnet::offer_dgrad_link(y, link);
  }
  CHECK(resnet::dgrad_graph_mode() == resnet::DgradGraphMode::kOff);
  CHECK_FALSE(resnet::claim_dgrad_link(y));  // the scope's end dropped the offer
  {
    const resnet::DgradGraphScope outer(resnet::DgradGraphMode::kAlways);
    {
      const resnet::DgradGraphScope inner(resnet::DgradGraphMode::kOff);
      CHECK(resnet::dgrad_graph_mode() == resnet::DgradGraphMode::kOff);
    }
    CHECK(resnet::dgrad_graph_mode() == resnet::DgradGraphMode::kAlways);
  }
}

TEST_CASE("dgrad_graph on the CPU links nothing and trains exactly like conv_bn_stats alone",
          "[resnet][dgrad_graph]") {
  torch::manual_seed(22);
  resnet::ResNetOptions o;
  o.depth = 50;
  o.num_classes = 10;
  o.fused_bn = true;
  o.fused_residual_grad = true;
  o.conv_bn_stats = true;
  resnet::ResNet plain(o);
  o.dgrad_graph = resnet::DgradGraphMode::kAlways;
  resnet::ResNet linked(o);
  test::copy_state(*plain, *linked);
  const auto images = torch::randn({2, 3, 32, 32}).contiguous(torch::MemoryFormat::ChannelsLast);
  const auto labels = torch::tensor({1, 7}, torch::kLong);
  torch::Tensor logits[2];
  const auto before = resnet::dgrad_graph_counters();
  int i = 0;
  for (auto* net : {&plain, &linked}) {
    (*net)->train();
    logits[i] = (*net)->forward(images);
    torch::nn::functional::cross_entropy(logits[i], labels).backward();
    ++i;
  }
  const auto after = resnet::dgrad_graph_counters();
  CHECK(after.offered == before.offered);
  CHECK(after.claimed == before.claimed);
  CHECK(torch::equal(logits[0], logits[1]));
  auto ref = plain->named_parameters();
  for (const auto& p : linked->named_parameters()) {
    INFO(p.key());
    CHECK(torch::equal(p.value().grad(), ref[p.key()].grad()));
  }
}
