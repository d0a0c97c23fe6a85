// The runner on a real GPU: each precision and memory format trains on CUDA, the run records
// the device, its environment and allocator peaks, and autocast really runs bf16 kernels.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "integration/test_support.h"
#include "runner/runner.h"

using namespace orch;

TEST_CASE("ResNet18 trains on CUDA in every precision and memory format", "[gpu]") {
  for (const char* precision : {"fp32", "amp"}) {
    for (const char* format : {"contiguous", "channels_last"}) {
      RunSpec spec = test::small_cpu_spec();
      spec.device = "cuda";
      spec.precision = std::string(precision) == "amp"
                           ? test::choice("amp", {{"dtype", std::string("bf16")}})
                           : test::choice("fp32");
      spec.memory_format = format;
      spec.measure_steps = 20;
      const auto doc = run_one(spec, test::built_plugins());
      INFO(precision << " " << format << ": " << doc.dump(2));
      REQUIRE(doc["status"] == "ok");
      CHECK(doc["device"] == "cuda:0");
      const auto& m = doc["metrics"];
      CHECK(m["loss_last"].get<double>() < 0.5 * m["loss_first"].get<double>());
      CHECK(m["peak_allocated_bytes"].get<double>() > 0);
      CHECK(m["peak_reserved_bytes"].get<double>() >= m["peak_allocated_bytes"].get<double>());
      // CUDA-event step times are device times: positive and no larger than the wall time.
      CHECK(m["device_step_ms_mean"].get<double>() > 0);
      CHECK(m["device_step_ms_mean"].get<double>() <= m["step_ms_mean"].get<double>() * 1.05);
      CHECK(doc["environment"]["gpu_name"].get<std::string>().size() > 0);
      CHECK(doc["environment"]["cudnn_version"].get<int>() >= 90000);
    }
  }
}

TEST_CASE("the amp plugin runs the forward pass in bf16 on CUDA", "[gpu]") {
  auto precision = test::built_plugins().create_precision(
      test::choice("amp", {{"dtype", std::string("bf16")}}), {torch::Device(torch::kCUDA, 0)});
  precision->configure();

  test::LinearProbe probe;  // reports the dtype its layer produced under autocast
  probe.fc->to(torch::kCUDA);
  Batch b{torch::randn({8, 4}, torch::kCUDA),
          torch::randint(3, {8}, torch::TensorOptions(torch::kCUDA).dtype(torch::kLong))};
  auto loss = precision->forward_loss(probe, b);
  CHECK(probe.seen == torch::kBFloat16);
  CHECK(loss.scalar_type() == torch::kFloat);  // the loss itself is computed in fp32
  // Outside the scope autocast is off again.
  CHECK(probe.fc(b.images).scalar_type() == torch::kFloat);
}
