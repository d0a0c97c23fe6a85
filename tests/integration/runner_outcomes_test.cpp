// Numbers that are not numbers, in one run on the CPU: a loss that becomes NaN or infinite is
// `diverged` (not `ok`), and a batch no memory can hold is `oom` (not `failed`), whichever
// way LibTorch reports the allocation failure. The absurd batches fail before anything is
// allocated (a size that overflows, or an allocation refused under an address-space limit),
// so the tests use no real memory.
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <regex>

#include "integration/test_support.h"
#include "runner/divergence.h"
#include "runner/out_of_memory.h"
#include "runner/runner.h"

using namespace orch;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// A step's loss as the document holds it: a number, or null where JSON cannot spell it.
bool finite_loss(const nlohmann::json& step) {
  return step["loss"].is_number() && std::isfinite(step["loss"].get<double>());
}

// Lowers this process's address-space limit to what it maps now plus `headroom` for the
// object's lifetime, so that an allocation larger than that fails at once, whatever the
// kernel's overcommit policy (under "always overcommit" a 12 TB allocation could succeed and
// then be touched page by page).
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(std::size_t headroom) {
    getrlimit(RLIMIT_AS, &saved_);
    std::ifstream in("/proc/self/statm");
    std::size_t pages = 0;
    in >> pages;
    rlimit lowered = saved_;
    lowered.rlim_cur = pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) + headroom;
    setrlimit(RLIMIT_AS, &lowered);
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

 private:
  rlimit saved_{};
};

}  // namespace

TEST_CASE("a run whose loss becomes NaN or infinite is diverged, naming the first such step",
          "[runner]") {
  RunSpec spec = test::small_cpu_spec();
  spec.optimizer.lr = 1e30;
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  REQUIRE(doc["status"] == "diverged");
  const std::string error = doc["error"].get<std::string>();
  std::smatch m;
  REQUIRE(std::regex_search(error, m,
                            std::regex(R"(^the loss became (nan|inf|-inf) at measured step (\d+) )"
                                       R"(of 12(, the first| \(step \d+: ))")));
  const auto first = static_cast<std::size_t>(std::stoul(m[2].str()));
  CHECK_THAT(error, Contains("lower the learning rate"));
  // The steps are kept: the named step is the first non-finite one.
  const auto& steps = doc["steps"];
  REQUIRE(steps.size() == 12);
  for (std::size_t i = 0; i < first; ++i) CHECK(finite_loss(steps[i]));
  CHECK_FALSE(finite_loss(steps[first]));
  // The speed was measured and is kept, for `orch rank --include-diverged`.
  CHECK(doc["metrics"]["images_per_s"].get<double>() > 0);
}

TEST_CASE("the same run at a sane learning rate stays ok", "[runner]") {
  RunSpec spec = test::small_cpu_spec();
  spec.measure_steps = 3;
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  CHECK(doc["status"] == "ok");
  CHECK_FALSE(doc.contains("error"));
}

TEST_CASE("divergence is read from the recorded losses and the final weights", "[runner]") {
  const double nan = std::nan(""), inf = INFINITY;
  CHECK_FALSE(divergence_error({2.3, 1.9, 1.5}, 12.5));
  CHECK_FALSE(divergence_error({}, 0.0));
  auto e = divergence_error({2.3, 1.9, inf, nan}, nan);
  REQUIRE(e);
  CHECK_THAT(*e, StartsWith("the loss became inf at measured step 2 of 4 (step 1: 1.9)"));
  e = divergence_error({nan, nan}, nan);
  REQUIRE(e);
  CHECK_THAT(*e, StartsWith("the loss became nan at measured step 0 of 2, the first; lower"));
  e = divergence_error({2.3, -inf}, 1.0);
  REQUIRE(e);
  CHECK_THAT(*e, StartsWith("the loss became -inf at measured step 1 of 2"));
  // Every loss finite, but the last update broke the weights.
  e = divergence_error({2.3, 1.9}, inf);
  REQUIRE(e);
  CHECK_THAT(*e, StartsWith("the weights became inf after the last measured step"));
}

TEST_CASE("a batch whose tensors cannot be sized is oom, not failed", "[runner]") {
  RunSpec spec = test::small_cpu_spec();
  spec.batch_size = std::int64_t{1'000'000'000'000'000};  // 10^15 images: 3e18 floats
  const auto doc = run_one(spec, test::built_plugins());
  INFO(doc.dump(2));
  CHECK(doc["status"] == "oom");
  const std::string error = doc["error"].get<std::string>();
  CHECK_THAT(error, StartsWith("out of memory at batch size 1000000000000000: its tensors are too "
                               "large to address ("));
  CHECK_THAT(error, Contains("overflow"));
  CHECK_FALSE(doc.contains("metrics"));
}

TEST_CASE("a batch beyond the host's memory is oom, not failed", "[runner]") {
  RunSpec spec = test::small_cpu_spec();
  spec.batch_size = std::int64_t{1'000'000'000};  // 12 TB of images
  nlohmann::json doc;
  {
    AddressSpaceLimit limit(std::size_t{4} << 30);
    doc = run_one(spec, test::built_plugins());
  }
  INFO(doc.dump(2));
  CHECK(doc["status"] == "oom");
  CHECK_THAT(doc["error"].get<std::string>(),
             StartsWith("out of host memory at batch size 1000000000: ") &&
                 Contains("can't allocate memory"));
}

TEST_CASE("allocation failures are told from other errors by their text", "[runner]") {
  // LibTorch's own words, as raised here.
  std::string overflow;
  try {
    (void)torch::empty({std::int64_t{1} << 62, 3, 32, 32});
  } catch (const c10::Error& e) {
    overflow = e.what_without_backtrace();
  }
  REQUIRE_FALSE(overflow.empty());
  auto e = out_of_memory_error(overflow, 7);
  REQUIRE(e);
  CHECK_THAT(*e, StartsWith("out of memory at batch size 7: its tensors are too large"));

  // As a plugin's constructor error reaches the runner: wrapped in the registry's words.
  e = out_of_memory_error(
      "data loader plugin 'synthetic' (/x.so): CUDA out of memory. Tried to allocate 11.18 TiB. "
      "GPU 0 has a total capacity of 139.81 GiB",
      4096);
  REQUIRE(e);
  CHECK_THAT(*e, StartsWith("out of memory at batch size 4096: data loader plugin"));
  e = out_of_memory_error("CUDA error: out of memory\nCUDA kernel errors might be ...", 1);
  REQUIRE(e);
  CHECK_THAT(*e, StartsWith("out of memory at batch size 1: CUDA error: out of memory"));
  e = out_of_memory_error("model plugin 'resnet' (/y.so): std::bad_alloc", 2);
  REQUIRE(e);
  CHECK_THAT(*e, StartsWith("out of host memory at batch size 2: "));

  // Errors that only happen near big batches, or nowhere near memory, stay failures.
  CHECK_FALSE(out_of_memory_error("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", 1));
  CHECK_FALSE(out_of_memory_error("CUDA error: an illegal memory access was encountered", 1));
  CHECK_FALSE(out_of_memory_error("Expected canUse32BitIndexMath(input) to be true", 1));
  CHECK_FALSE(out_of_memory_error("Trying to create tensor with negative dimension -4", 1));
  CHECK_FALSE(out_of_memory_error("fault plugin: injected exception at step 2", 1));
}
