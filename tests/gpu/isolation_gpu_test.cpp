// `isolation: process` against `isolation: worker` on a real GPU (issue 35 part 2): the same
// configurations (fp16 and bf16, `default` and `cuda-graph`) swept once with a process per run
// and once through a warm worker measure the same (their 95% intervals overlap), and a worker's
// memory peaks are per run: a small batch measured after a large one in the same worker reports
// its own peak, as it does in a process of its own. ResNet18 at 112x112 keeps it short; the
// ResNet50 comparison is bench/suites/sweeps.isolation.yaml.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/statistics.h"
#include "integration/test_support.h"
#include "storage/store.h"

using namespace orch;
namespace fs = std::filesystem;

namespace {

struct Interval {
  double mean = 0, half = 0;
  std::size_t n = 0;
};

// Each configuration's images_per_s over its ok runs: mean and the 95% half-width.
std::map<std::string, Interval> intervals(const storage::Store& store, const std::string& sweep) {
  std::map<std::string, std::vector<double>> values;
  for (const auto& r : store.runs(*store.find_sweep(sweep))) {
    if (r.status == "ok" && r.metric("images_per_s"))
      values[r.name].push_back(*r.metric("images_per_s"));
  }
  std::map<std::string, Interval> out;
  for (const auto& [name, v] : values) {
    Interval i;
    i.n = v.size();
    for (double x : v) i.mean += x / static_cast<double>(v.size());
    double ss = 0;
    for (double x : v) ss += (x - i.mean) * (x - i.mean);
    if (v.size() > 1) {
      const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
      i.half = analysis::t_quantile_975(static_cast<std::int64_t>(v.size() - 1)) * sd /
               std::sqrt(static_cast<double>(v.size()));
    }
    out[name] = i;
  }
  return out;
}

fs::path write(const test::TempDir& tmp, const std::string& file, const std::string& isolation,
               const std::string& matrix) {
  const fs::path path = tmp.path() / file;
  std::ofstream(path) << "name: iso\nbase:\n"
                      << "  model: {plugin: resnet, depth: 18}\n"
                      << "  data: {plugin: synthetic, image_size: 112, batches: 2}\n"
                      << "  memory_format: channels_last\n  cudnn_benchmark: on\n"
                      // fp16 under cuda-graph needs the fused optimizer (the plan says why).
                      << "  optimizer: {name: sgd, impl: fused, lr: 0.1, momentum: 0.9}\n"
                      << "  device: cuda\n  isolation: " << isolation << "\n"
                      << "  steps: {warmup: 10, measure: 30}\n  telemetry: {enabled: false}\n"
                      << matrix;
  return path;
}

}  // namespace

TEST_CASE("process and worker isolation measure the same configurations alike",
          "[gpu][isolation]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const std::string matrix =
      "  batch_size: 64\n  repeat: 3\nmatrix:\n"
      "  precision: [{plugin: amp, dtype: bf16}, {plugin: amp, dtype: fp16}]\n"
      "  stream: [default, cuda-graph]\n";
  for (const std::string isolation : {"process", "worker"}) {
    const auto r =
        test::run_orch("--db '" + db.string() + "' sweep --sweep " + isolation + " '" +
                       write(tmp, isolation + ".yaml", isolation, matrix).string() + "' --gpus 0");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  storage::Store store(db.string());
  const auto process = intervals(store, "process");
  const auto worker = intervals(store, "worker");
  REQUIRE(process.size() == 4);
  REQUIRE(worker.size() == 4);
  for (const auto& [name, p] : process) {
    INFO(name << ": process " << p.mean << " ± " << p.half << ", worker " << worker.at(name).mean
              << " ± " << worker.at(name).half);
    const Interval& w = worker.at(name);
    CHECK(p.n == 3);
    CHECK(w.n == 3);
    // The intervals overlap: the means are no farther apart than the two half-widths.
    CHECK(std::fabs(p.mean - w.mean) <= p.half + w.half);
  }
}

TEST_CASE("a warm worker's memory peaks are per run", "[gpu][isolation]") {
  // The large batch first, then the small one in the same worker: the small run's peak must be
  // its own (the peak statistics reset between runs), as in a process of its own.
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const std::string matrix =
      "  precision: {plugin: amp, dtype: bf16}\nmatrix:\n  batch_size: [256, 32]\n";
  for (const std::string isolation : {"process", "worker"}) {
    const auto r =
        test::run_orch("--db '" + db.string() + "' sweep --sweep " + isolation + " '" +
                       write(tmp, isolation + ".yaml", isolation, matrix).string() + "' --gpus 0");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  storage::Store store(db.string());
  std::map<std::string, std::map<std::string, double>> peak;  // sweep -> run name -> bytes
  for (const std::string sweep : {"process", "worker"}) {
    for (const auto& r : store.runs(*store.find_sweep(sweep))) {
      REQUIRE(r.metric("peak_allocated_bytes"));
      peak[sweep][r.name] = *r.metric("peak_allocated_bytes");
    }
  }
  REQUIRE(peak["worker"].size() == 2);
  const double big = peak["worker"].at("b256"), small = peak["worker"].at("b32");
  INFO("worker b256 " << big << ", b32 " << small << "; process b32 " << peak["process"].at("b32"));
  CHECK(small < 0.6 * big);
  CHECK(std::fabs(small - peak["process"].at("b32")) <= 0.05 * peak["process"].at("b32"));
}
