// Runner for the GPU suite: without a CUDA device it says so and exits 77, which ctest shows
// as "Skipped"; with one it runs the test cases asked for like any Catch2 suite. Listing the
// cases (--list-tests, --list-test-names-only, ...) needs no GPU: the build lists them to
// register one ctest entry per case (tests/CMakeLists.txt), and scripts/gpu-tests-isolated.sh
// to run each in its own process.
#define CATCH_CONFIG_RUNNER
#include <torch/cuda.h>

#include <catch2/catch.hpp>
#include <iostream>
#include <string_view>

#include "private_lock_dir.h"

int main(int argc, char* argv[]) {
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    listing = listing || std::string_view(argv[i]).rfind("--list", 0) == 0;
  if (!listing && !torch::cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device visible; the GPU suite runs on the GPU machine\n";
    return 77;
  }
  orch::test::use_private_lock_dir();
  return Catch::Session().run(argc, argv);
}
