// The host sampler: /proc/stat, /proc/loadavg and /proc/meminfo parsed from known snapshots
// (a fake /proc folder), the busy shares computed from their deltas, the per-run summaries
// over the measure window, and the sampling thread on this machine's own /proc.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "telemetry/host_sampler.h"
#include "telemetry/host_stat.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

// A folder standing in for /proc, removed at the end of the test.
struct FakeProc {
  fs::path root;
  FakeProc() {
    root = fs::temp_directory_path() / ("orch-fake-proc-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~FakeProc() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(root / name) << text;
  }
  // One snapshot of the three files.
  void snapshot(const std::string& stat, double load1, std::int64_t available_kb) const {
    write("stat", stat + "intr 12345 0 0\nctxt 999\nbtime 1700000000\n");
    write("loadavg", std::to_string(load1) + " 0.50 0.25 2/345 6789\n");
    write("meminfo",
          "MemTotal:       16384000 kB\nMemFree:          100000 kB\n"
          "MemAvailable:   " +
              std::to_string(available_kb) + " kB\nBuffers:           1000 kB\n");
  }
};

// Two cores. Ticks: user nice system idle iowait irq softirq steal guest guest_nice.
// cpu0 busy 75 of 500, cpu1 busy 75 of 500.
const char* kStatA =
    "cpu  100 0 50 800 50 0 0 0 0 0\n"
    "cpu0 50 0 25 400 25 0 0 0 0 0\n"
    "cpu1 50 0 25 400 25 0 0 0 0 0\n";
// +100 ticks each: cpu0 busy all 100 (90 user, 10 system), cpu1 busy 10 (user) of 100.
const char* kStatB =
    "cpu  200 0 60 890 50 0 0 0 0 0\n"
    "cpu0 140 0 35 400 25 0 0 0 0 0\n"
    "cpu1 60 0 25 490 25 0 0 0 0 0\n";
// +100 ticks each again: cpu0 busy all 100 (80 user, 10 irq, 10 softirq), cpu1 busy 30
// (20 user, 10 steal) of 100.
const char* kStatC =
    "cpu  300 0 60 960 50 10 10 10 0 0\n"
    "cpu0 220 0 35 400 25 10 10 0 0 0\n"
    "cpu1 80 0 25 560 25 0 0 10 0 0\n";

}  // namespace

TEST_CASE("host: /proc/stat's counters add up to busy and total ticks", "[telemetry][host]") {
  const auto stat = parse_proc_stat(
      "cpu  10 20 30 40 50 60 70 80 90 100\ncpu0 1 2 3 4 5 6 7 8 0 0\ncpu3 1 0 0 1\n"
      "cpufreq junk\nintr 1 2\n");
  REQUIRE(stat);
  // busy: user nice system irq softirq steal; guest and guest_nice are inside user and nice.
  CHECK(stat->all.busy == 10 + 20 + 30 + 60 + 70 + 80);
  CHECK(stat->all.total == 10 + 20 + 30 + 60 + 70 + 80 + 40 + 50);
  CHECK(stat->cores_counted == 2);
  REQUIRE(stat->cores.size() == 4);
  CHECK(stat->cores[0].busy == 1 + 2 + 3 + 6 + 7 + 8);
  CHECK(stat->cores[1].total == 0);  // offline: no line
  CHECK(stat->cores[3].busy == 1);   // an old kernel's four counters
  CHECK(stat->cores[3].total == 2);
  CHECK_FALSE(parse_proc_stat("intr 1 2\n"));
  CHECK_FALSE(parse_proc_stat("cpu 1 2\n"));
}

TEST_CASE("host: the busy share is the busy ticks' delta over the total's", "[telemetry][host]") {
  CHECK(busy_pct({150, 1000}, {260, 1200}) == 55.0);
  CHECK(busy_pct({75, 500}, {175, 600}) == 100.0);
  CHECK_FALSE(busy_pct({75, 500}, {75, 500}));  // no tick passed
  CHECK_FALSE(busy_pct({75, 500}, {10, 40}));   // counters reset (a core back online)
}

TEST_CASE("host: load and memory from /proc/loadavg and /proc/meminfo", "[telemetry][host]") {
  CHECK(parse_loadavg("3.50 1.00 0.50 2/345 6789\n") == 3.5);
  CHECK_FALSE(parse_loadavg(""));
  const MemInfo m = parse_meminfo("MemTotal: 2048 kB\nMemAvailable:    1024 kB\n");
  CHECK(m.total_bytes == 2048 * 1024);
  CHECK(m.available_bytes == 1024 * 1024);
  CHECK_FALSE(parse_meminfo("MemTotal: 2048 kB\n").available_bytes);  // a pre-3.14 kernel
}

TEST_CASE("host: samples from fake /proc snapshots, and the run's summary", "[telemetry][host]") {
  FakeProc proc;
  proc.snapshot(kStatA, 1.0, 9000000);
  HostProbe probe(proc.root.string());
  REQUIRE(probe.first());
  CHECK(probe.mem_total_bytes() == std::int64_t{16384000} * 1024);

  proc.snapshot(kStatB, 3.5, 8000000);
  const HostSample b = probe.read(0.1);
  REQUIRE(b.cpu_util_pct);
  CHECK(*b.cpu_util_pct == 55.0);  // 110 busy ticks of 200
  CHECK(b.busiest_core == 0);
  CHECK(b.busiest_core_pct == 100.0);
  REQUIRE(b.core_pct.size() == 2);
  CHECK(b.core_pct[1] == 10.0);
  CHECK(b.load1 == 3.5);
  CHECK(b.mem_available_bytes == std::int64_t{8000000} * 1024);

  proc.snapshot(kStatC, 4.25, 7000000);
  const HostSample c = probe.read(0.2);
  CHECK(c.cpu_util_pct == 65.0);  // 130 of 200: irq, softirq and steal count as busy
  CHECK(c.core_pct[0] == 100.0);
  CHECK(c.core_pct[1] == 30.0);
  CHECK(probe.missing().empty());

  HostTelemetryRecord r;
  r.available = true;
  r.cores = 2;
  r.measure_window_s = std::pair{0.05, 0.25};
  HostSample before = b;  // outside the window: not summarised
  before.t_s = 0.01;
  before.cpu_util_pct = 0.0;
  r.samples = {before, b, c};
  const auto m = host_telemetry_metrics(r);
  CHECK(m.at("host_cpu_util_mean_pct").get<double>() == 60.0);
  CHECK(m.at("host_cpu_util_max_pct").get<double>() == 65.0);
  CHECK(m.at("host_cpu_busiest_core_mean_pct").get<double>() == 100.0);
  CHECK(m.at("host_load1_mean").get<double>() == 3.875);
  CHECK(m.at("host_load1_max").get<double>() == 4.25);
  CHECK(m.at("host_mem_available_min_bytes").get<std::int64_t>() == std::int64_t{7000000} * 1024);
  CHECK(m.at("host_cpu_cores").get<int>() == 2);
  CHECK(m.at("host_telemetry_samples").get<int>() == 2);

  const auto j = host_telemetry_json(r);
  CHECK(j.at("source") == "procfs");
  REQUIRE(j.at("samples").size() == 3);
  CHECK(j.at("samples")[1].at("cpu_util_pct").get<double>() == 55.0);
  CHECK(j.at("samples")[1].at("busiest_core").get<int>() == 0);
  CHECK_FALSE(j.at("samples")[1].contains("core_pct"));  // per core stays in memory

  r.measure_window_s.reset();  // never marked: no summary
  CHECK(host_telemetry_metrics(r).empty());
}

TEST_CASE("host: a core that goes offline and back has no share until read twice",
          "[telemetry][host]") {
  FakeProc proc;
  proc.snapshot(kStatA, 1.0, 1000);
  HostProbe probe(proc.root.string());
  proc.snapshot("cpu  200 0 60 890 50 0 0 0 0 0\ncpu0 140 0 35 400 25 0 0 0 0 0\n", 1.0, 1000);
  const HostSample offline = probe.read(0.1);
  CHECK(offline.busiest_core == 0);
  REQUIRE(offline.core_pct.size() == 1);
  proc.snapshot(kStatC, 1.0, 1000);
  const HostSample back = probe.read(0.2);
  REQUIRE(back.core_pct.size() == 2);
  CHECK(back.core_pct[0] == 100.0);
  CHECK(back.core_pct[1] < 0);  // counted from boot: unknown, not its since-boot average
}

TEST_CASE("host: a file that cannot be read leaves its field null, with the reason",
          "[telemetry][host]") {
  FakeProc proc;
  proc.snapshot(kStatA, 1.0, 1000);
  HostProbe probe(proc.root.string());
  fs::remove(proc.root / "loadavg");
  proc.write("meminfo", "MemTotal: 2048 kB\n");
  proc.write("stat", kStatA);  // no tick passed
  const HostSample s = probe.read(0.1);
  CHECK_FALSE(s.cpu_util_pct);
  CHECK_FALSE(s.load1);
  CHECK_FALSE(s.mem_available_bytes);
  CHECK(probe.missing().at("load1") ==
        "cannot read a load from " + (proc.root / "loadavg").string());
  CHECK(probe.missing().at("mem_available_bytes").rfind("no MemAvailable in", 0) == 0);
  CHECK(probe.missing().at("cpu_util_pct") == "no CPU time passed between two readings");
}

TEST_CASE("host: no /proc/stat makes the sampler unavailable with the reason",
          "[telemetry][host]") {
  FakeProc proc;
  HostSampler sampler({100, proc.root.string()});
  CHECK_FALSE(sampler.available());
  CHECK(sampler.unavailable_reason() == "cannot read " + (proc.root / "stat").string());
  sampler.start();  // does nothing
  const HostTelemetryRecord r = sampler.stop();
  CHECK_FALSE(r.available);
  CHECK(r.reason == sampler.unavailable_reason());
  CHECK(host_telemetry_json(r).at("reason") == r.reason);
  CHECK(host_telemetry_metrics(r).empty());
}

TEST_CASE("host: ORCH_PROC_ROOT points the sampler at another /proc", "[telemetry][host]") {
  ::unsetenv("ORCH_PROC_ROOT");
  CHECK(default_proc_root() == "/proc");
  ::setenv("ORCH_PROC_ROOT", "/tmp/somewhere", 1);
  CHECK(default_proc_root() == "/tmp/somewhere");
  CHECK(HostSamplerOptions{}.proc_root == "/tmp/somewhere");
  ::unsetenv("ORCH_PROC_ROOT");
}

TEST_CASE("host: the thread samples this machine's /proc inside the window", "[telemetry][host]") {
  if (!fs::exists("/proc/stat")) return;  // not Linux: nothing to sample (Catch2 v2 has no SKIP)
  HostSampler sampler({20, "/proc"});
  REQUIRE(sampler.available());
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  sampler.mark_measure_begin();
  // Busy on this thread, so the window has CPU time to measure.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(120);
  volatile std::uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < until) spin = spin + 1;
  sampler.mark_measure_end();
  const HostTelemetryRecord r = sampler.stop();
  REQUIRE(r.available);
  CHECK(r.cores >= 1);
  REQUIRE(r.measure_window_s);
  CHECK(r.samples.size() >= 3);
  const auto m = host_telemetry_metrics(r);
  REQUIRE(m.contains("host_cpu_util_mean_pct"));
  CHECK(m.at("host_cpu_util_mean_pct").get<double>() >= 0.0);
  CHECK(m.at("host_cpu_util_max_pct").get<double>() <= 100.0);
  CHECK(m.at("host_cpu_busiest_core_mean_pct").get<double>() <= 100.0);
  CHECK(m.at("host_mem_available_min_bytes").get<std::int64_t>() > 0);
}

}  // namespace orch
