// The resnet model's `max_pool_impl` on the CPU: declared, and (our kernels being CUDA-only)
// ATen's pooling, counted, with the same numbers. The CUDA kernels are compared with ATen's bit
// for bit in tests/gpu/max_pool_gpu_test.cpp.
#include "max_pool.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "integration/test_support.h"

using namespace orch;

TEST_CASE("resnet declares max_pool_impl: aten or orch, orch by default, unhashed at default",
          "[resnet][max_pool]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "resnet");
  REQUIRE(info != nullptr);
  const ParamSpec* impl = nullptr;
  for (const auto& p : info->params) {
    if (p.name == "max_pool_impl") impl = &p;
  }
  REQUIRE(impl != nullptr);
  CHECK(impl->type == ParamType::kString);
  CHECK(std::get<std::string>(impl->default_value) == "orch");  // measured faster, same results
  REQUIRE(impl->allowed.size() == 2);
  CHECK(std::get<std::string>(impl->allowed[0]) == "aten");
  CHECK(std::get<std::string>(impl->allowed[1]) == "orch");
  CHECK_FALSE(impl->hashed_at_default);  // added after resnet results were recorded
  CHECK_FALSE(impl->doc.empty());
  CHECK(resnet::max_pool_impl_from_string("orch") == resnet::MaxPoolImpl::kOrch);
  CHECK(resnet::max_pool_impl_from_string("aten") == resnet::MaxPoolImpl::kAten);
  CHECK(std::string(resnet::to_string(resnet::MaxPoolImpl::kOrch)) == "orch");
  CHECK_THROWS_WITH(resnet::max_pool_impl_from_string("cudnn"),
                    Catch::Matchers::Contains("not one of aten, orch"));
}

TEST_CASE("max_pool_impl: orch runs ATen's pooling on the CPU, counted", "[resnet][max_pool]") {
  torch::nn::MaxPool2d pool(torch::nn::MaxPool2dOptions(3).stride(2).padding(1));
  auto x = torch::randn({2, 16, 9, 11}).contiguous(torch::MemoryFormat::ChannelsLast);
  x.requires_grad_(true);
  CHECK_FALSE(resnet::orch_max_pool_supported(x, pool->options));
  const auto before = resnet::max_pool_counters();
  const auto y = resnet::max_pool(*pool, x, resnet::MaxPoolImpl::kOrch);
  const auto after = resnet::max_pool_counters();
  CHECK(after.aten == before.aten + 1);
  CHECK(after.orch == before.orch);
  CHECK(torch::equal(y, torch::max_pool2d(x, 3, 2, 1)));
  CHECK(y.sizes() == torch::IntArrayRef({2, 16, 5, 6}));
  y.sum().backward();  // ATen's autograd: every window's winner gets a 1
  CHECK(x.grad().sum().item<double>() == Approx(2 * 16 * 5 * 6));
  // The raw function refuses, naming the input.
  CHECK_THROWS_WITH(resnet::orch_max_pool(x, pool->options),
                    Catch::Matchers::Contains("an input our kernels do not take"));
}

TEST_CASE("a resnet with max_pool_impl: orch computes what the default one does on the CPU",
          "[resnet][max_pool]") {
  auto make = [](const std::string& impl) {
    return test::built_plugins().create_model(
        test::choice("resnet", {{"depth", std::int64_t{18}}, {"max_pool_impl", impl}}),
        {10, {3, 32, 32}});
  };
  torch::manual_seed(5);
  auto aten = make("aten");
  auto ours = make("orch");
  test::copy_state(aten->module(), ours->module());
  const auto images = torch::randn({2, 3, 32, 32});
  CHECK(torch::equal(aten->forward(images), ours->forward(images)));
  CHECK_THROWS_WITH(make("cudnn"), Catch::Matchers::Contains("max_pool_impl"));
}
