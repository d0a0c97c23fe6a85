// A plan's memory: what a planned run holds (its configuration as text, shared
// by the repeats), kept and at the peak of building the plan.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>

#include "plan/planner.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

// seed: [0..seeds-1] x batch_size: [1..batches], on the test catalogue's
// defaults.
std::string matrix_yaml(int seeds, int batches, int repeat = 1, const std::string& extra = "") {
  std::string yaml =
      "name: big\nbase:\n  repeat: " + std::to_string(repeat) + "\n" + extra + "matrix:\n  seed: [";
  for (int i = 0; i < seeds; ++i) yaml += (i ? ", " : "") + std::to_string(i);
  yaml += "]\n  batch_size: [";
  for (int i = 0; i < batches; ++i) yaml += (i ? ", " : "") + std::to_string(i + 1);
  return yaml + "]\n";
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
      PlanOptions opts;
      opts.max_runs = kRuns;
      const Plan p = test::plan_text(yaml, opts, test::real_catalog());
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
  INFO("per run: kept " << kept << " bytes, peak " << peak << " bytes (configuration " << got[2]
                        << " bytes)");
  // Each run held its configuration as a tree, several KiB: with it, a run kept
  // about 10 KB, and building the plan peaked at about 22 KB a run.
  CHECK(kept < 6000);
  CHECK(peak < 9000);
}

}  // namespace
}  // namespace orch
