// The resnet model's `conv_bn_stats` on the CPU: the parameter is declared (off, unhashed off),
// and a network with it on computes exactly what fused_bn alone computes, every convolution +
// batch-norm pair counted as a fallback (on the CPU there is no cuDNN graph and no fused
// kernel), including the identity blocks' conv1 with fused_residual_grad's sink; and a run
// stores those counts with its counters (model.*). The GPU path
// (statistics from the convolution's epilogue) is compared in
// tests/gpu/conv_bn_from_stats_gpu_test.cpp.
#include "conv_bn_from_stats.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "integration/test_support.h"
#include "resnet.h"
#include "runner/runner.h"

using namespace orch;

TEST_CASE("resnet declares conv_bn_stats, off by default and unhashed off",
          "[resnet][conv_bn_from_stats]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "resnet");
  REQUIRE(info != nullptr);
  const ParamSpec* p = nullptr;
  for (const auto& s : info->params) {
    if (s.name == "conv_bn_stats") p = &s;
  }
  REQUIRE(p != nullptr);
  CHECK(p->type == ParamType::kBool);
  CHECK(std::get<bool>(p->default_value) == false);
  CHECK(p->hash_exempt_at_default());
  CHECK(p->doc.find("fp16") != std::string::npos);
}

TEST_CASE("conv_bn_stats on the CPU trains exactly like fused_bn alone, every pair counted",
          "[resnet][conv_bn_from_stats]") {
  for (const int depth : {50, 18}) {
    INFO("ResNet" << depth);
    torch::manual_seed(21);
    resnet::ResNetOptions o;
    o.depth = depth;
    o.num_classes = 10;
    o.fused_bn = true;
    o.fused_residual_grad = true;  // the plugin's default (the struct's is off)
    resnet::ResNet plain(o);
    o.conv_bn_stats = true;
    resnet::ResNet stats(o);
    test::copy_state(*plain, *stats);
    const auto images = torch::randn({2, 3, 32, 32}).contiguous(torch::MemoryFormat::ChannelsLast);
    const auto labels = torch::tensor({3, 9}, torch::kLong);
    torch::Tensor logits[2];
    int i = 0;
    const auto before = resnet::conv_bn_from_stats_counters();
    const auto rg_before = resnet::residual_grad_counters();
    for (auto* net : {&plain, &stats}) {
      (*net)->train();
      logits[i] = (*net)->forward(images);
      torch::nn::functional::cross_entropy(logits[i], labels).backward();
      ++i;
    }
    const auto after = resnet::conv_bn_from_stats_counters();
    const auto rg_after = resnet::residual_grad_counters();
    // ResNet50: 16 bottlenecks x 3 pairs; ResNet18: 8 basic blocks x 2. None taken on the CPU.
    CHECK(after.fallback - before.fallback == (depth == 50 ? 48 : 16));
    CHECK(after.taken == before.taken);
    // Both networks' identity blocks ran conv1 through the residual-gradient function.
    CHECK(rg_after.plain - rg_before.plain == (depth == 50 ? 2 * 12 : 0));
    CHECK(torch::equal(logits[0], logits[1]));
    auto grads = plain->named_parameters();
    for (const auto& p : stats->named_parameters()) {
      INFO(p.key());
      REQUIRE(p.value().grad().defined());
      CHECK(torch::equal(p.value().grad(), grads[p.key()].grad()));
    }
    auto buffers = plain->named_buffers();
    for (const auto& b : stats->named_buffers()) {
      INFO(b.key());
      CHECK(torch::equal(b.value(), buffers[b.key()]));
    }
    // Evaluation: the modules' own forward (conv_bn_relu_from_stats falls back: no batch
    // statistics).
    stats->eval();
    plain->eval();
    torch::NoGradGuard no_grad;
    CHECK(torch::equal(stats->forward(images), plain->forward(images)));
  }
}

TEST_CASE("a run keeps the resnet's path counts with its counters",
          "[resnet][conv_bn_from_stats][runner]") {
  // ResNet18 on the CPU with fused_bn and conv_bn_stats: every call falls back, and the run's
  // counters say so (1 warm-up + 2 measured steps, each a forward).
  RunSpec spec = test::small_cpu_spec();
  spec.model = test::choice(
      "resnet", {{"depth", std::int64_t{18}}, {"fused_bn", true}, {"conv_bn_stats", true}});
  spec.measure_steps = 2;
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  const auto& c = doc["counters"];
  // 8 basic blocks x 2 convolution + batch-norm pairs, 3 forwards.
  REQUIRE(c.contains("model.conv_bn_stats.fallback"));
  CHECK(c["model.conv_bn_stats.fallback"].get<double>() == 3 * 16);
  CHECK_FALSE(c.contains("model.conv_bn_stats.taken"));  // zeros are left out
  // Those 16 and the stem's batch-norm ran unfused (no CUDA here).
  CHECK(c["model.fused_bn.unfused"].get<double>() == 3 * 17);
  CHECK_FALSE(c.contains("model.fused_bn.orch"));

  // The counts are the run's own, not the process's so far: a second run counts the same.
  const auto again = run_one(spec, test::built_plugins());
  REQUIRE(again["status"] == "ok");
  CHECK(again["counters"]["model.conv_bn_stats.fallback"].get<double>() == 3 * 16);
}

TEST_CASE("fused_downsample on the CPU computes exactly what conv_bn_stats alone does, counted",
          "[resnet][conv_bn_from_stats][dual_bn]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "resnet");
  REQUIRE(info != nullptr);
  const ParamSpec* p = nullptr;
  for (const auto& s : info->params) {
    if (s.name == "fused_downsample") p = &s;
  }
  REQUIRE(p != nullptr);
  CHECK(std::get<bool>(p->default_value) == false);
  CHECK(p->hash_exempt_at_default());

  torch::manual_seed(22);
  resnet::ResNetOptions o;
  o.depth = 50;
  o.num_classes = 10;
  o.fused_bn = true;
  o.fused_residual_grad = true;
  o.conv_bn_stats = true;
  resnet::ResNet stats(o);
  o.fused_downsample = true;
  resnet::ResNet dual(o);
  test::copy_state(*stats, *dual);
  const auto images = torch::randn({2, 3, 32, 32}).contiguous(torch::MemoryFormat::ChannelsLast);
  const auto labels = torch::tensor({1, 4}, torch::kLong);
  torch::Tensor logits[2];
  int i = 0;
  resnet::ConvBnFromStatsCounters counts[2];
  for (auto* net : {&stats, &dual}) {
    const auto before = resnet::conv_bn_from_stats_counters();
    logits[i] = (*net)->forward(images);
    torch::nn::functional::cross_entropy(logits[i], labels).backward();
    const auto after = resnet::conv_bn_from_stats_counters();
    counts[i] = {after.taken - before.taken, after.fallback - before.fallback,
                 after.dual - before.dual, after.dual_fallback - before.dual_fallback};
    ++i;
  }
  // The four downsample blocks fell back to the usual path (no CUDA), which counts its own
  // pairs as conv_bn_stats alone does.
  CHECK(counts[1].dual == 0);
  CHECK(counts[1].dual_fallback == 4);
  CHECK(counts[0].dual_fallback == 0);
  CHECK(counts[1].fallback == counts[0].fallback);
  CHECK(torch::equal(logits[0], logits[1]));
  auto grads = stats->named_parameters();
  for (const auto& q : dual->named_parameters()) {
    INFO(q.key());
    CHECK(torch::equal(q.value().grad(), grads[q.key()].grad()));
  }
}
