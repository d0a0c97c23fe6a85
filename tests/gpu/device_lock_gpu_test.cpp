// Two sweeps started at once on one GPU (different names, different databases): the device
// lock (sweep/device_lock.h) makes the second wait for the first, so no run of one overlaps a
// run of the other and both measure the GPU alone. Without it both ran to the end, each
// several times slower, exit 0.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "integration/test_support.h"
#include "process/child.h"
#include "storage/store.h"

using namespace orch;
namespace fs = std::filesystem;

namespace {}  // namespace

TEST_CASE("two sweeps started at once on one GPU never overlap their runs", "[device_lock]") {
  test::TempDir tmp;
  std::vector<std::unique_ptr<process::Child>> sweeps;
  for (const std::string name : {"left", "right"}) {
    std::ofstream(tmp.path() / (name + ".yaml"))
        << "name: " << name << "\nbase:\n"
        << "  model: {plugin: resnet, depth: 18}\n"
        << "  data: {plugin: synthetic, image_size: 64, classes: 10, batches: 2}\n"
        << "  precision: {plugin: amp, dtype: bf16}\n"
        << "  device: cuda\n  batch_size: 64\n  steps: {warmup: 5, measure: 40}\n"
        << "matrix:\n  seed: [1, 2]\n";
    process::ChildOptions o;
    o.argv = {ORCH_BINARY,
              "--db",
              (tmp.path() / (name + ".db")).string(),
              "sweep",
              (tmp.path() / (name + ".yaml")).string(),
              "--gpus",
              "0"};
    o.out = process::Stdio::file((tmp.path() / (name + ".out")).string());
    o.err = process::Stdio::file((tmp.path() / (name + ".err")).string());
    sweeps.push_back(std::make_unique<process::Child>(o));
  }
  std::string said;
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    const auto st = sweeps[i]->wait();
    const std::string name = i == 0 ? "left" : "right";
    const std::string out =
        test::slurp(tmp.path() / (name + ".out")) + test::slurp(tmp.path() / (name + ".err"));
    INFO(name << ":\n" << out);
    CHECK(st.exit_code == 0);
    said += out;
  }
  CHECK(said.find("waiting for GPU 0 (GPU-") != std::string::npos);
  const auto left = test::runs_of(tmp.path() / "left.db", "left");
  const auto right = test::runs_of(tmp.path() / "right.db", "right");
  REQUIRE(left.size() == 2);
  REQUIRE(right.size() == 2);
  // Each run measured the GPU alone, and says so: NVML listed no other process computing on it
  // (the waiting sweep holds no CUDA context; the run's own sweep is not counted).
  for (const auto* runs : {&left, &right}) {
    for (const auto& r : *runs) {
      INFO(r.name);
      CHECK(r.metric("gpu_other_processes") == std::optional<double>(0.0));
    }
  }
  for (const auto& a : left) {
    for (const auto& b : right) {
      INFO("left " << a.started_at << ".." << a.finished_at << ", right " << b.started_at << ".."
                   << b.finished_at);
      CHECK((a.finished_at <= b.started_at || b.finished_at <= a.started_at));
      std::cout << "left " << a.name << " " << a.metric("images_per_s").value_or(0)
                << " img/s; right " << b.name << " " << b.metric("images_per_s").value_or(0)
                << " img/s\n";
    }
  }
}
