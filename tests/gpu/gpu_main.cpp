// Runner for the GPU suite: without a CUDA device it says so and exits 77, which ctest shows
// as "Skipped"; with one it runs every test case like any Catch2 suite.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <torch/cuda.h>

#include <iostream>

int main(int argc, char* argv[]) {
  if (!torch::cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device visible; the GPU suite runs on the GPU machine\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
