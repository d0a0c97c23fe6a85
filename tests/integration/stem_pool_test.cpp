// The resnet model's `fused_stem` on the CPU: declared (off, unhashed off), and a network with it
// on computes exactly what fused_bn alone computes, the stem counted as unfused (the fused stem
// needs CUDA, fp16/bf16 and channels-last). The GPU path is compared in
// tests/gpu/stem_pool_gpu_test.cpp.
#include "stem_pool.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "integration/test_support.h"
#include "resnet.h"

using namespace orch;

TEST_CASE("resnet declares fused_stem, off by default and unhashed off", "[resnet][stem_pool]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "resnet");
  REQUIRE(info != nullptr);
  const ParamSpec* p = nullptr;
  for (const auto& s : info->params) {
    if (s.name == "fused_stem") p = &s;
  }
  REQUIRE(p != nullptr);
  CHECK(p->type == ParamType::kBool);
  CHECK(std::get<bool>(p->default_value) == false);
  CHECK(p->hash_exempt_at_default());
}

TEST_CASE("fused_stem on the CPU computes exactly what fused_bn alone does, counted unfused",
          "[resnet][stem_pool]") {
  torch::manual_seed(23);
  resnet::ResNetOptions o;
  o.depth = 18;
  o.num_classes = 10;
  o.fused_bn = true;
  resnet::ResNet plain(o);
  o.fused_stem = true;
  resnet::ResNet fused(o);
  test::copy_state(*plain, *fused);
  const auto images = torch::randn({2, 3, 32, 32}).contiguous(torch::MemoryFormat::ChannelsLast);
  const auto labels = torch::tensor({1, 4}, torch::kLong);
  torch::Tensor logits[2];
  std::int64_t unfused[2], fused_calls[2];
  int i = 0;
  for (auto* net : {&plain, &fused}) {
    const auto before = resnet::stem_pool_counters();
    logits[i] = (*net)->forward(images);
    torch::nn::functional::cross_entropy(logits[i], labels).backward();
    const auto after = resnet::stem_pool_counters();
    unfused[i] = after.unfused - before.unfused;
    fused_calls[i] = after.fused - before.fused;
    ++i;
  }
  CHECK(unfused[0] == 0);  // without the option the stem never asks
  CHECK(unfused[1] == 1);
  CHECK(fused_calls[1] == 0);
  CHECK(torch::equal(logits[0], logits[1]));
  CHECK(torch::equal(plain->bn1->running_mean, fused->bn1->running_mean));
  auto grads = plain->named_parameters();
  for (const auto& q : fused->named_parameters()) {
    INFO(q.key());
    CHECK(torch::equal(q.value().grad(), grads[q.key()].grad()));
  }
}
