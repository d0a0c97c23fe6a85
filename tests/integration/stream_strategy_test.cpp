// Stream strategies on the CPU: each one trains (the loss falls on a fixed batch) and, where it
// only changes *where* work runs, ends with the same weights as `default`; misuse is a run
// failure with the reason.
#include <catch2/catch.hpp>

#include "integration/test_support.h"
#include "runner/runner.h"

using namespace orch;

namespace {

nlohmann::json run_with(const std::string& strategy, std::map<std::string, Value> params = {},
                        const std::string& location = "device", std::int64_t batch = 8) {
  RunSpec spec = test::small_cpu_spec();
  spec.batch_size = batch;
  spec.stream = test::choice(strategy, std::move(params));
  spec.data.params.set("location", location);
  return run_one(spec, test::built_plugins());
}

}  // namespace

TEST_CASE("copy-overlap trains exactly like default on the CPU", "[stream]") {
  const auto base = run_with("default");
  const auto overlap = run_with("copy-overlap", {}, "pageable");
  INFO(overlap.dump(2));
  REQUIRE(base["status"] == "ok");
  REQUIRE(overlap["status"] == "ok");
  CHECK(overlap["metrics"]["loss_last"].get<double>() <
        0.5 * overlap["metrics"]["loss_first"].get<double>());
  CHECK(overlap["metrics"]["param_checksum"].get<double>() ==
        Approx(base["metrics"]["param_checksum"].get<double>()).epsilon(1e-6));
}

TEST_CASE("multi-stream splits the batch and still trains", "[stream]") {
  // Micro-batches of 8, like the other tests' whole batch: smaller ones make batch-norm too
  // noisy for ResNet18 on 32x32 images to learn in 12 steps.
  const auto doc = run_with("multi-stream", {{"streams", std::int64_t{2}}}, "device", 16);
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "ok");
  CHECK(doc["metrics"]["loss_last"].get<double>() <
        0.5 * doc["metrics"]["loss_first"].get<double>());
}

TEST_CASE("multi-stream refuses more streams than samples", "[stream]") {
  const auto doc = run_with("multi-stream", {{"streams", std::int64_t{16}}});  // batch is 8
  CHECK(doc["status"] == "failed");
  CHECK(doc["error"].get<std::string>().find("cannot be split into 16 micro-batches") !=
        std::string::npos);
}

TEST_CASE("cuda-graph on the CPU fails the run with the reason", "[stream]") {
  const auto doc = run_with("cuda-graph", {{"warmup_steps", std::int64_t{1}}});
  CHECK(doc["status"] == "failed");
  CHECK(doc["error"].get<std::string>().find("cuda-graph needs a CUDA device") !=
        std::string::npos);
}

TEST_CASE("the synthetic loader serves host batches when asked", "[stream]") {
  auto loader = test::built_plugins().create_loader(
      test::choice("synthetic", {{"image_size", std::int64_t{16}},
                                 {"channels", std::int64_t{3}},
                                 {"classes", std::int64_t{10}},
                                 {"batches", std::int64_t{2}},
                                 {"location", std::string("pageable")}}),
      {4, torch::kCPU, 7, /*channels_last=*/true});
  auto a = loader->next();
  auto b = loader->next();
  auto c = loader->next();
  CHECK(a.images.sizes() == torch::IntArrayRef({4, 3, 16, 16}));
  CHECK(a.images.is_contiguous(at::MemoryFormat::ChannelsLast));
  CHECK(a.labels.max().item<std::int64_t>() < 10);
  CHECK_FALSE(torch::equal(a.images, b.images));  // two distinct batches...
  CHECK(torch::equal(a.images, c.images));        // ...served in a cycle
}

TEST_CASE("the synthetic loader reuses the batches an earlier loader drew when they are the same",
          "[stream]") {
  // A warm worker builds a loader per run; drawing the same batches again is what the cache
  // saves. Same parameters and seed: the same numbers, counted as reused. Anything that changes
  // the numbers (seed, batch, layout) draws them, and at most 8 sets are kept (least recently
  // used out first). The seeds here are the test's own, so other tests' sets do not interfere.
  auto make = [](std::int64_t seed, std::int64_t batch, bool channels_last,
                 const char* location = "pageable") {
    return test::built_plugins().create_loader(
        test::choice("synthetic", {{"image_size", std::int64_t{16}},
                                   {"channels", std::int64_t{3}},
                                   {"classes", std::int64_t{10}},
                                   {"batches", std::int64_t{2}},
                                   {"location", std::string(location)}}),
        {batch, torch::kCPU, seed, channels_last});
  };
  auto reused = [](const auto& l) { return l->counters().at("reused_host_batches"); };
  auto first = make(1011, 4, false);
  CHECK(reused(first) == 0);
  const Batch a = first->next();
  auto same = make(1011, 4, false, "device");  // where the batches go is not part of the numbers
  CHECK(reused(same) == 1);
  const Batch b = same->next();
  CHECK(torch::equal(a.images, b.images));
  CHECK(torch::equal(a.labels, b.labels));
  auto other_seed = make(1012, 4, false);
  CHECK(reused(other_seed) == 0);
  CHECK_FALSE(torch::equal(a.images, other_seed->next().images));
  CHECK(reused(make(1012, 8, false)) == 0);  // another batch size
  CHECK(reused(make(1012, 8, true)) == 0);   // another layout
  // Sets alternating (a matrix's batch axis varying fastest) are all kept.
  CHECK(reused(make(1011, 4, false)) == 1);
  CHECK(reused(make(1012, 8, true)) == 1);
  // Eight newer sets push the oldest out: drawn again, and equal to what was drawn before.
  for (std::int64_t seed = 2000; seed < 2008; ++seed) CHECK(reused(make(seed, 4, false)) == 0);
  auto back = make(1011, 4, false);
  CHECK(reused(back) == 0);
  CHECK(torch::equal(a.images, back->next().images));
  // The first loader's batches are its own and unchanged by all that.
  CHECK_FALSE(torch::equal(a.images, first->next().images));  // its second batch now
  CHECK(torch::equal(a.images, first->next().images));        // and its first again
}

TEST_CASE("the synthetic loader puts batches where `location` says", "[stream]") {
  // The meta device stands in for a GPU on a CPU-only machine: `device` must move the batches
  // there, `pinned` and `pageable` must keep them in host memory (pinned only where CUDA can
  // pin; tests/gpu checks is_pinned on a GPU). A loader ignoring `location` fails here.
  for (const char* location : {"device", "pinned", "pageable"}) {
    INFO(location);
    auto loader = test::built_plugins().create_loader(
        test::choice("synthetic", {{"image_size", std::int64_t{8}},
                                   {"channels", std::int64_t{3}},
                                   {"classes", std::int64_t{10}},
                                   {"batches", std::int64_t{1}},
                                   {"location", std::string(location)}}),
        {2, torch::Device(torch::kMeta), 0, /*channels_last=*/false});
    const Batch b = loader->next();
    const bool on_host = std::string(location) != "device";
    CHECK(b.images.device().is_cpu() == on_host);
    CHECK(b.labels.device().is_cpu() == on_host);
    CHECK(b.images.device().is_meta() == !on_host);
  }
}
