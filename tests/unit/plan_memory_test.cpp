// A plan's memory: what a planned run holds, the estimate made before a matrix is expanded, and
// the refusal (exit 2 in the CLI, a PlanError here) of a plan that would not fit, before it is
// built. The limit is passed in (PlanOptions::allocatable_bytes), as the machine's would be.
#include "plan/plan_memory.h"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "plan/planner.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using Catch::Matchers::Contains;
constexpr std::uint64_t kMiB = 1024 * 1024;

// seed: [0..seeds-1] x batch_size: [1..batches], on the test catalogue's defaults.
std::string matrix_yaml(int seeds, int batches, int repeat = 1, const std::string& extra = "") {
  std::string yaml =
      "name: big\nbase:\n  repeat: " + std::to_string(repeat) + "\n" + extra + "matrix:\n  seed: [";
  for (int i = 0; i < seeds; ++i) yaml += (i ? ", " : "") + std::to_string(i);
  yaml += "]\n  batch_size: [";
  for (int i = 0; i < batches; ++i) yaml += (i ? ", " : "") + std::to_string(i + 1);
  return yaml + "]\n";
}

PlanOptions with_memory(std::uint64_t bytes, std::size_t max_runs = 1000000) {
  PlanOptions o;
  o.max_runs = max_runs;
  o.allocatable_bytes = bytes;
  return o;
}

TEST_CASE("plan memory: the estimate grows with the configuration, and half the memory is used",
          "[plan][plan_memory]") {
  CHECK(plan_bytes_per_run(0) == kPlanRunBytes);
  CHECK(plan_bytes_per_run(1000) == kPlanRunBytes + 1000 * kPlanBytesPerConfigByte);
  const std::uint64_t per_run = plan_bytes_per_run(1200);
  CHECK(runs_that_fit(100 * kMiB, per_run) == 50 * kMiB / per_run);
  CHECK(runs_that_fit(per_run, per_run) == 0);  // half of it holds none
  CHECK(approximate_size(3 * kMiB / 2 * 1024) == "about 1.5 GiB");
  CHECK(approximate_size(320 * kMiB) == "about 320 MiB");
  CHECK(approximate_size(12 * 1024) == "about 12 KiB");
}

TEST_CASE("plan memory: a plan over what memory holds is refused before it is built, saying so",
          "[plan][plan_memory]") {
  // 90,000 runs with --max-runs raised, and 64 MiB to allocate: half of it holds a few
  // thousand runs. Refused at the matrix, at once: nothing was expanded.
  const auto start = std::chrono::steady_clock::now();
  const PlanError e =
      test::plan_failure(matrix_yaml(300, 300), with_memory(64 * kMiB), test::real_catalog());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  const std::string what = e.what();
  INFO(what);
  CHECK(e.key_path == "matrix");
  CHECK_THAT(what, Contains("the plan has 90000 runs (90000 configurations x 1 repeats)"));
  CHECK_THAT(what, Contains(" of memory (about ") && Contains(" KiB a run)"));
  CHECK_THAT(what, Contains("this process can allocate about 64 MiB"));
  CHECK_THAT(what, Contains("ulimit -v"));
  CHECK_THAT(what, Contains("narrow the matrix") && Contains("--max-runs"));
  // The number of runs it says would fit does fit, under the same limit.
  const std::size_t fit = std::stoul(what.substr(what.find("take half: about ") + 17));
  CHECK(fit > 1000);
  CHECK(fit < 90000);
  const Plan p = test::plan_text(matrix_yaml(static_cast<int>(fit / 100), 100),
                                 with_memory(64 * kMiB), test::real_catalog());
  CHECK(p.runs.size() == fit / 100 * 100);

  // --max-runs is still what refuses a plan over it, whatever memory allows.
  const PlanError over = test::plan_failure(matrix_yaml(300, 300), with_memory(64 * kMiB, 50000),
                                            test::real_catalog());
  CHECK_THAT(over.what(), Contains("more than the limit of 50000; raise it with --max-runs"));
}

TEST_CASE("plan memory: repeats count, and so does the length of the values",
          "[plan][plan_memory]") {
  const std::uint64_t memory = 64 * kMiB;
  // 2,000 configurations fit; five repeats of each do not.
  CHECK(test::plan_text(matrix_yaml(20, 100), with_memory(memory), test::real_catalog())
            .runs.size() == 2000);
  const PlanError repeats =
      test::plan_failure(matrix_yaml(20, 100, 5), with_memory(memory), test::real_catalog());
  CHECK_THAT(repeats.what(), Contains("10000 runs (2000 configurations x 5 repeats)"));

  // 400 configurations with a short tag fit; with one tag of 100 KB each configuration's text
  // is that much longer, and 400 of them do not.
  FixedCatalog catalog(test::real_plugins());
  catalog.add(test::plugin(
      "tagged", PluginKind::kModel,
      {ParamSpec{"tag", ParamType::kString, std::string(""), {}, std::nullopt, std::nullopt, ""}}));
  const std::string tagged = "  model: {plugin: tagged}\n";
  const std::string shorts = matrix_yaml(200, 1, 1, tagged) + "  model.tag: [a, b]\n";
  CHECK(test::plan_text(shorts, with_memory(memory), catalog).runs.size() == 400);
  const std::string longs =
      matrix_yaml(200, 1, 1, tagged) + "  model.tag: [a, " + std::string(100000, 'x') + "]\n";
  const PlanError e = test::plan_failure(longs, with_memory(memory), catalog);
  CHECK_THAT(e.what(), Contains("the plan has 400 runs"));
}

TEST_CASE("plan memory: a count past 2^64 is said as such, not as the number it saturates at",
          "[plan][plan_memory]") {
  // Sixteen axes of 16 values: 2^64 configurations, one more than a size_t holds.
  FixedCatalog catalog(test::real_plugins());
  std::vector<ParamSpec> params;
  std::string yaml = "name: huge\nbase:\n  model: {plugin: wide}\n  repeat: REPEAT\nmatrix:\n";
  for (int a = 0; a < 16; ++a) {
    const std::string name = "p" + std::to_string(a);
    params.push_back(
        ParamSpec{name, ParamType::kInt, std::int64_t{0}, {}, std::nullopt, std::nullopt, ""});
    yaml += "  model." + name + ": [";
    for (int v = 0; v < 16; ++v) yaml += (v ? "," : "") + std::to_string(v);
    yaml += "]\n";
  }
  catalog.add(test::plugin("wide", PluginKind::kModel, params));
  const auto with_repeat = [&](int repeat) {
    std::string y = yaml;
    return y.replace(y.find("REPEAT"), 6, std::to_string(repeat));
  };
  const std::size_t unlimited = std::numeric_limits<std::size_t>::max();
  // --max-runs at its largest: memory refuses it.
  const PlanError memory =
      test::plan_failure(with_repeat(1), with_memory(64 * kMiB, unlimited), catalog);
  INFO(memory.what());
  CHECK_THAT(memory.what(), Contains("the plan has 2^64 or more runs (2^64 or more configurations "
                                     "before exclude x 1 repeats)"));
  // Two repeats: over --max-runs, and the runs saturate rather than wrap.
  const PlanError runs =
      test::plan_failure(with_repeat(2), with_memory(64 * kMiB, unlimited), catalog);
  INFO(runs.what());
  CHECK_THAT(runs.what(), Contains("the plan has 2^64 or more runs (2^64 or more configurations "
                                   "before exclude x 2 repeats)"));
}

TEST_CASE("plan memory: the repeats of a configuration share its text", "[plan][plan_memory]") {
  const Plan p = test::plan_text(matrix_yaml(2, 1, 3), {}, test::real_catalog());
  REQUIRE(p.runs.size() == 6);
  CHECK(&p.runs[0].config.text() == &p.runs[1].config.text());
  CHECK(&p.runs[0].config.text() == &p.runs[2].config.text());
  CHECK(&p.runs[2].config.text() != &p.runs[3].config.text());  // another configuration
  CHECK(p.runs[0].config.text() == p.runs[0].config.json().dump());
}

// Bytes malloc has handed out: small chunks in its arenas, large ones mapped on
// their own.
std::size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// A "Key:   123 kB" line of /proc/self/status, in bytes.
long long status_bytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::atoll(line.c_str() + key.size() + 1) * 1024;
  }
  return -1;
}

TEST_CASE(
    "plan memory: a planned run keeps a few KB, and building the plan "
    "peaks at a few more",
    "[plan][plan_memory]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("skipped: AddressSanitizer's allocator does not count as glibc's does");
  return;
#endif
  // 20,000 runs with the shipped plugins' parameters, planned in a child
  // process: its peak resident set (VmHWM, reset just before) is the plan's
  // alone.
  constexpr int kRuns = 20000;
  const std::string yaml = matrix_yaml(200, 100);
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::ofstream("/proc/self/clear_refs") << "5";
    const long long rss = status_bytes("VmRSS");
    const std::size_t heap = heap_in_use();
    long long out[3] = {0, 0, 0};
    {
      const Plan p = test::plan_text(yaml, with_memory(64ULL << 30), test::real_catalog());
      out[0] = static_cast<long long>(heap_in_use() - heap);
      out[1] = status_bytes("VmHWM") - rss;
      out[2] = static_cast<long long>(p.runs.front().config.text().size());
    }
    const bool written = ::write(fds[1], out, sizeof out) == static_cast<ssize_t>(sizeof out);
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  long long got[3] = {0, 0, 0};
  const bool read = ::read(fds[0], got, sizeof got) == static_cast<ssize_t>(sizeof got);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(read);
  const double kept = static_cast<double>(got[0]) / kRuns,
               peak = static_cast<double>(got[1]) / kRuns;
  const auto estimate = static_cast<double>(plan_bytes_per_run(static_cast<std::uint64_t>(got[2])));
  INFO("per run: kept " << kept << " bytes, peak " << peak << " bytes, estimate " << estimate
                        << " bytes (configuration " << got[2] << " bytes)");
  // The estimate a plan is refused by (plan_memory.h) is above both.
  CHECK(kept < estimate);
  CHECK(peak < estimate);
  // Each run held its configuration as a tree, several KiB: with it, a run kept
  // about 10 KB, and building the plan peaked at about 22 KB a run.
  CHECK(kept < 6000);
  CHECK(peak < 9000);
}

}  // namespace
}  // namespace orch
