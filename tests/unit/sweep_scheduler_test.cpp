// The scheduler's logic with fakes: a clock that advances only when the loop sleeps, runs that
// finish after a scripted time with a scripted outcome, and an in-memory recorder.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <sstream>

#include "result/failure_class.h"
#include "result/result_document.h"
#include "sweep/environment_fault.h"
#include "sweep/scheduler.h"
#include "unit/plan_test_catalog.h"

namespace orch::sweep {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class FakeClock final : public SweepClock {
 public:
  Clock::time_point now() const override { return t_; }
  void sleep_for(std::chrono::milliseconds d) override { t_ += d; }
  Clock::time_point t_ = Clock::time_point{} + 1000h;
};

struct Script {
  std::string status = "ok";
  double seconds = 10;
  double images_per_s = 100;
  bool gpu_lost = false;
  std::string failure_class = {};  // as the run's process would write it; empty: none written
  json phases = json::object();    // metrics of an ok run's phases (result/run_phases.h)
};

class FakeLauncher;

class FakeHandle final : public RunHandle {
 public:
  FakeHandle(FakeLauncher& l, const RunSpec& spec, std::string gpu, Script s);
  ~FakeHandle() override;
  std::optional<json> poll() override;
  void interrupt() override { interrupted_ = true; }

 private:
  FakeLauncher& l_;
  RunSpec spec_;
  std::string gpu_;
  Script s_;
  Clock::time_point end_;
  bool interrupted_ = false;
};

class FakeLauncher final : public Launcher {
 public:
  explicit FakeLauncher(FakeClock& c) : clock(c) {}
  std::unique_ptr<RunHandle> launch(const RunSpec& spec, const std::string& gpu) override {
    if (fail_launch && fail_launch(spec)) throw EnvironmentFault("no space left on spec.json");
    launched.push_back({spec.name, gpu});
    auto it = scripts.find(spec.name);
    return std::make_unique<FakeHandle>(*this, spec, gpu,
                                        it == scripts.end() ? Script{} : it->second);
  }
  FakeClock& clock;
  std::map<std::string, Script> scripts;                      // by run name
  std::vector<std::pair<std::string, std::string>> launched;  // name, gpu
  std::map<std::string, int> running_on;                      // gpu -> runs in flight now
  int max_on_one_gpu = 0;
  std::function<void()> on_launch;
  std::function<bool(const RunSpec&)> fail_launch;  // true: its files cannot be written
  std::map<std::string, json> left_on_disk;         // by run name: unrecorded results
  std::vector<json> kept;                           // documents kept for a later resume
  std::optional<json> unrecorded_result(const RunSpec& spec) override {
    auto it = left_on_disk.find(spec.name);
    return it == left_on_disk.end() ? std::nullopt : std::optional<json>(it->second);
  }
  void keep_unrecorded(const RunSpec&, const json& doc) override { kept.push_back(doc); }
};

FakeHandle::FakeHandle(FakeLauncher& l, const RunSpec& spec, std::string gpu, Script s)
    : l_(l), spec_(spec), gpu_(std::move(gpu)), s_(s) {
  end_ = l_.clock.now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s_.seconds));
  l_.max_on_one_gpu = std::max(l_.max_on_one_gpu, ++l_.running_on[gpu_]);
  if (l_.on_launch) l_.on_launch();
}
FakeHandle::~FakeHandle() { --l_.running_on[gpu_]; }

std::optional<json> FakeHandle::poll() {
  json doc = {{"format", "orch.result"},
              {"version", 2},
              {"run", {{"name", spec_.name}, {"hash", spec_.hash}, {"repeat", spec_.repeat}}}};
  if (interrupted_) {
    doc["status"] = "interrupted";
    return doc;
  }
  if (l_.clock.now() < end_) return std::nullopt;
  doc["status"] = s_.status;
  if (s_.status == "ok") {
    doc["metrics"] = {{"images_per_s", s_.images_per_s}};
    doc["metrics"].update(s_.phases);
  } else
    doc["error"] = "scripted " + s_.status;
  if (s_.gpu_lost) doc["telemetry"] = {{"gpu_lost", true}};
  if (!s_.failure_class.empty()) doc["failure_class"] = s_.failure_class;
  return doc;
}

class FakeRecorder final : public Recorder {
 public:
  std::map<std::pair<std::string, int>, PriorRun> prior;
  std::map<std::string, double> measured;                            // by hash
  std::map<std::pair<std::string, int>, std::string> status;         // what was recorded
  std::map<std::pair<std::string, int>, std::string> failure_class;  // as recorded
  std::vector<std::string> finished_names, stale;
  std::vector<std::pair<std::string, DeviceVerdict>> checks;  // gpu, verdict
  std::function<void(const json&)> on_finish;                 // may throw, as a full disk does
  int begins = 0, heartbeats = 0;
  std::map<std::pair<std::string, int>, PriorRun> prior_runs() override { return prior; }
  std::optional<double> measured_duration_s(const RunSpec& s) override {
    auto it = measured.find(s.hash);
    return it == measured.end() ? std::nullopt : std::optional<double>(it->second);
  }
  std::int64_t begin(const RunSpec& s, const std::string&) override {
    status[{s.hash, s.repeat}] = "running";
    return ++begins;
  }
  void heartbeat(std::int64_t) override { ++heartbeats; }
  void finish(std::int64_t, const json& doc) override {
    if (on_finish) on_finish(doc);
    if (doc.contains("failure_class")) {
      failure_class[{doc["run"]["hash"].get<std::string>(), doc["run"]["repeat"].get<int>()}] =
          doc["failure_class"].get<std::string>();
    }
    status[{doc["run"]["hash"].get<std::string>(), doc["run"]["repeat"].get<int>()}] =
        doc["status"].get<std::string>();
    finished_names.push_back(doc["run"]["name"].get<std::string>());
  }
  void mark_stale(const RunSpec& s, const std::string&) override { stale.push_back(s.name); }
  void device_checked(const std::string& gpu, const DeviceVerdict& v) override {
    checks.emplace_back(gpu, v);
  }
};

// Health checks that answer after `seconds` with a scripted verdict.
class FakeChecker final : public DeviceChecker {
 public:
  explicit FakeChecker(FakeClock& c) : clock(c) {}
  struct Handle final : CheckHandle {
    FakeClock& clock;
    Clock::time_point end;
    DeviceVerdict verdict;
    Handle(FakeClock& c, Clock::time_point e, DeviceVerdict v) : clock(c), end(e), verdict(v) {}
    std::optional<DeviceVerdict> poll() override {
      if (clock.now() < end) return std::nullopt;
      return verdict;
    }
  };
  std::unique_ptr<CheckHandle> start(const std::string& gpu) override {
    started.push_back(gpu);
    return std::make_unique<Handle>(clock, clock.now() + 5s, verdict);
  }
  FakeClock& clock;
  DeviceVerdict verdict{true, "scripted: works"};
  std::vector<std::string> started;
};

// Six runs: batch 16 32 64 x precision fp32 tf32 -> names like "fp32/b16".
Plan six_runs() {
  return test::plan_text(R"(name: s
base: {device: cpu}
matrix:
  precision: [fp32, tf32]
  batch_size: [16, 32, 64]
)");
}

struct Fixture {
  FakeClock clock;
  FakeLauncher launcher{clock};
  FakeRecorder recorder;
  SweepOptions options;
  std::ostringstream out;
  std::atomic<bool> stop{false};
  SweepSummary run(const Plan& p) {
    return run_sweep(p.runs, options, launcher, recorder, clock, out, stop);
  }
};

TEST_CASE("sweep: every run is started once and recorded; all ok exits 0", "[sweep]") {
  Fixture f;
  Plan p = six_runs();
  auto s = f.run(p);
  CHECK(s.total == 6);
  CHECK(s.ok == 6);
  CHECK(s.exit_code() == 0);
  CHECK(f.launcher.launched.size() == 6);
  CHECK(f.recorder.finished_names.size() == 6);
  CHECK(f.out.str().find("[6/6]") != std::string::npos);
}

TEST_CASE("sweep: resume skips finished runs, redoes interrupted and stale running ones",
          "[sweep]") {
  Fixture f;
  Plan p = six_runs();
  f.recorder.prior[{p.runs[0].hash, 0}] = {"ok", 10.0};
  f.recorder.prior[{p.runs[1].hash, 0}] = {"failed", 3.0};
  f.recorder.prior[{p.runs[2].hash, 0}] = {"interrupted", std::nullopt};
  f.recorder.prior[{p.runs[3].hash, 0}] = {"running", std::nullopt};
  auto s = f.run(p);
  CHECK(s.already_done == 2);
  CHECK(s.ok == 4);
  std::set<std::string> launched;
  for (auto& [name, gpu] : f.launcher.launched) launched.insert(name);
  CHECK(launched.size() == 4);
  CHECK_FALSE(launched.count(p.runs[0].name));
  CHECK_FALSE(launched.count(p.runs[1].name));
  CHECK(launched.count(p.runs[2].name));
  CHECK(launched.count(p.runs[3].name));
  CHECK(f.recorder.stale == std::vector<std::string>{p.runs[3].name});
  CHECK(s.already_not_ok == 1);
  CHECK(s.exit_code() == 1);  // runs[1] stays `failed`: not every run of the plan is ok

  SECTION("--retry-failed runs the failed one again") {
    Fixture g;
    g.recorder.prior = f.recorder.prior;
    g.options.retry_failed = true;
    auto s2 = g.run(p);
    CHECK(s2.already_done == 1);
    CHECK(g.launcher.launched.size() == 5);
  }
}

TEST_CASE("sweep: a resume with nothing left to run exits 1 while a recorded run is not ok",
          "[sweep]") {
  Plan p = six_runs();
  for (const char* status : {"failed", "oom", "timeout", "skipped"}) {
    Fixture f;
    for (const RunSpec& r : p.runs) f.recorder.prior[{r.hash, r.repeat}] = {"ok", 10.0};
    f.recorder.prior[{p.runs[4].hash, 0}] = {status, 3.0};
    auto s = f.run(p);
    INFO(status);
    CHECK(f.launcher.launched.empty());
    CHECK(s.already_done == 6);
    CHECK(s.failed == 0);
    CHECK(s.exit_code() == 1);
  }
  Fixture all_ok;
  for (const RunSpec& r : p.runs) all_ok.recorder.prior[{r.hash, r.repeat}] = {"ok", 10.0};
  CHECK(all_ok.run(p).exit_code() == 0);
}

TEST_CASE("sweep: two GPUs are both used, never two runs on one", "[sweep]") {
  Fixture f;
  f.options.gpus = {"0", "1"};
  Plan p = six_runs();
  auto s = f.run(p);
  CHECK(s.ok == 6);
  CHECK(f.launcher.max_on_one_gpu == 1);
  std::map<std::string, int> per_gpu;
  for (auto& [name, gpu] : f.launcher.launched) ++per_gpu[gpu];
  CHECK(per_gpu["0"] == 3);
  CHECK(per_gpu["1"] == 3);
  // Six 10 s runs on two GPUs take ~30 s, not ~60 s.
  CHECK(f.clock.now() - (Clock::time_point{} + 1000h) < 35s);
}

TEST_CASE("sweep: K consecutive device failures retire a GPU; the others carry on", "[sweep]") {
  Fixture f;
  f.options.gpus = {"0", "1"};
  f.options.max_consecutive_failures = 2;
  Plan p = six_runs();
  // GPU 0 gets runs 0, 2 (failing: short so it picks up work first); GPU 1 the long good ones.
  f.launcher.scripts[p.runs[0].name] = {"failed", 1, 0, false, "device"};
  f.launcher.scripts[p.runs[1].name] = {"ok", 100};
  f.launcher.scripts[p.runs[2].name] = {"failed", 1, 0, false, "device"};
  auto s = f.run(p);
  std::map<std::string, std::vector<std::string>> by_gpu;
  for (auto& [name, gpu] : f.launcher.launched) by_gpu[gpu].push_back(name);
  CHECK(by_gpu["0"].size() == 2);  // retired after its second failure
  CHECK(by_gpu["1"].size() == 4);
  CHECK(s.failed == 2);
  CHECK(s.ok == 4);
  CHECK(s.exit_code() == 1);
  CHECK(f.out.str().find("no longer using gpu 0") != std::string::npos);
}

TEST_CASE("sweep: when every GPU is retired the rest is recorded as skipped", "[sweep]") {
  Fixture f;
  f.options.max_consecutive_failures = 2;
  Plan p = six_runs();
  f.launcher.scripts[p.runs[0].name] = {"failed", 1, 0, false, "device"};
  f.launcher.scripts[p.runs[1].name] = {"timeout", 1};  // a hang: the device's, until checked
  auto s = f.run(p);
  CHECK(f.launcher.launched.size() == 2);
  CHECK(s.skipped == 4);
  CHECK(f.recorder.status[{p.runs[5].hash, 0}] == "skipped");
  CHECK(s.exit_code() == 1);
}

TEST_CASE("sweep: out of memory is the configuration's outcome, not the GPU's fault", "[sweep]") {
  Fixture f;
  f.options.max_consecutive_failures = 2;
  Plan p = six_runs();
  for (auto& r : p.runs) f.launcher.scripts[r.name] = {"oom", 1};
  auto s = f.run(p);
  CHECK(f.launcher.launched.size() == 6);
  CHECK(s.failed == 6);
  CHECK(s.skipped == 0);
}

TEST_CASE("sweep: diverged runs are counted, never retire a GPU, and a resume keeps them",
          "[sweep]") {
  Fixture f;
  f.options.max_consecutive_failures = 2;
  Plan p = six_runs();
  for (std::size_t i = 1; i < p.runs.size(); ++i) f.launcher.scripts[p.runs[i].name] = {"diverged"};
  auto s = f.run(p);
  CHECK(f.launcher.launched.size() == 6);  // a diverged run is the configuration's, not the GPU's
  CHECK(s.ok == 1);
  CHECK(s.failed == 5);
  CHECK(s.diverged == 5);
  CHECK(s.skipped == 0);
  CHECK(s.exit_code() == 1);
  const std::string out = f.out.str();
  CHECK(out.find("[2/6] " + p.runs[1].name +
                 " (repeat 0) on cpu: diverged: scripted diverged | failures 1 (1 diverged) |") !=
        std::string::npos);
  CHECK(out.find("failures 5 (5 diverged)") != std::string::npos);

  Fixture resumed;
  for (const RunSpec& r : p.runs) resumed.recorder.prior[{r.hash, r.repeat}] = {"ok", 10.0};
  resumed.recorder.prior[{p.runs[2].hash, 0}] = {"diverged", 3.0};
  auto s2 = resumed.run(p);
  CHECK(resumed.launcher.launched.empty());
  CHECK(s2.already_not_ok == 1);
  CHECK(s2.exit_code() == 1);

  Fixture retried;
  retried.recorder.prior = resumed.recorder.prior;
  retried.options.retry_failed = true;
  auto s3 = retried.run(p);
  REQUIRE(retried.launcher.launched.size() == 1);
  CHECK(retried.launcher.launched[0].first == p.runs[2].name);
  CHECK(s3.exit_code() == 0);
}

TEST_CASE("sweep: a lost GPU is retired at once", "[sweep]") {
  Fixture f;
  f.options.gpus = {"0", "1"};
  Plan p = six_runs();
  Script lost{"ok", 1, 100, true};
  f.launcher.scripts[p.runs[0].name] = lost;
  f.run(p);
  int on0 = 0;
  for (auto& [name, gpu] : f.launcher.launched) on0 += gpu == "0";
  CHECK(on0 == 1);
}

TEST_CASE("sweep: the deadline defers runs that would not finish, using measured times",
          "[sweep]") {
  Fixture f;
  Plan p = six_runs();
  for (auto& r : p.runs) f.recorder.measured[r.hash] = 100;  // each run is known to take 100 s
  for (auto& r : p.runs) f.launcher.scripts[r.name] = {"ok", 100};
  f.options.deadline = f.clock.now() + 250s;  // room for two runs, not three
  auto s = f.run(p);
  CHECK(s.ok == 2);
  CHECK(s.deferred == 4);
  CHECK(s.exit_code() == 3);
  CHECK(f.out.str().find("deferred") != std::string::npos);
}

TEST_CASE("sweep: without measurements the deadline uses this sweep's own durations", "[sweep]") {
  Fixture f;
  Plan p = six_runs();
  for (auto& r : p.runs) f.launcher.scripts[r.name] = {"ok", 60};
  f.options.deadline = f.clock.now() + 150s;
  auto s = f.run(p);
  // Run 1 starts (nothing known), run 2 at 60 s (fits: 120 <= 150), run 3 at 120 s would end
  // at 180 s: deferred, and so is everything after it.
  CHECK(s.ok == 2);
  CHECK(s.deferred == 4);
}

TEST_CASE("sweep: fast-first orders by measured time, else by the cost proxy", "[sweep]") {
  Plan p = six_runs();
  SECTION("proxy: fp32 is costlier than tf32, bigger batches costlier than small") {
    Fixture f;
    f.options.fast_first = true;
    f.run(p);
    REQUIRE(f.launcher.launched.size() == 6);
    CHECK(f.launcher.launched.front().first.find("tf32") != std::string::npos);
    CHECK(f.launcher.launched.front().first.find("16") != std::string::npos);
    CHECK(f.launcher.launched.back().first.find("fp32") != std::string::npos);
    CHECK(f.launcher.launched.back().first.find("64") != std::string::npos);
  }
  SECTION("measured times win when every run has one") {
    Fixture f;
    f.options.fast_first = true;
    double t = 600;
    for (auto& r : p.runs) f.recorder.measured[r.hash] = t -= 60;  // the last is the fastest
    f.run(p);
    CHECK(f.launcher.launched.front().first == p.runs.back().name);
    CHECK(f.launcher.launched.back().first == p.runs.front().name);
  }
}

TEST_CASE("sweep: a stop request interrupts the running run and starts nothing more", "[sweep]") {
  Fixture f;
  Plan p = six_runs();
  int launches = 0;
  f.launcher.on_launch = [&] {
    if (++launches == 2) f.stop.store(true);  // SIGINT arrives while the second run runs
  };
  auto s = f.run(p);
  CHECK(f.launcher.launched.size() == 2);
  CHECK(s.interrupted);
  CHECK(s.ok == 1);
  CHECK(f.recorder.status[{p.runs[1].hash, 0}] == "interrupted");
  CHECK(f.recorder.status.count({p.runs[2].hash, 0}) == 0);  // never started: resume runs it
  CHECK(s.exit_code() == 3);
}

TEST_CASE("sweep: heartbeats are sent for long runs", "[sweep]") {
  Fixture f;
  Plan p = six_runs();
  f.options.heartbeat_interval = 10s;
  for (auto& r : p.runs) f.launcher.scripts[r.name] = {"ok", 45};
  f.run(p);
  CHECK(f.recorder.heartbeats >= 6 * 4);
}

TEST_CASE("sweep: the progress line has done/total, failures, ETA and the best so far", "[sweep]") {
  Fixture f;
  Plan p = six_runs();
  f.launcher.scripts[p.runs[0].name] = {"ok", 10, 500};
  f.launcher.scripts[p.runs[1].name] = {"failed", 10};
  f.run(p);
  const std::string out = f.out.str();
  CHECK(out.find("[2/6] " + p.runs[1].name +
                 " (repeat 0) on cpu: failed: scripted failed | "
                 "failures 1 | elapsed 0:20, ETA 0:40 | best " +
                 p.runs[0].name + " 500.0 img/s") != std::string::npos);
}

}  // namespace
}  // namespace orch::sweep

namespace orch::sweep {
namespace {

TEST_CASE("sweep: five configuration failures in a row retire nothing; the good runs all run",
          "[sweep][failure_class]") {
  Fixture f;
  f.options.max_consecutive_failures = 3;
  FakeChecker checker(f.clock);
  f.options.device_checker = &checker;
  Plan p = six_runs();
  // Exceptions on a healthy device, as the run's process reports them, and two without a
  // class (an exception the sweep sees only as a failed document): the configuration's.
  for (int i = 0; i < 5; ++i) {
    f.launcher.scripts[p.runs[static_cast<std::size_t>(i)].name] = {"failed", 1, 0, false,
                                                                    i < 3 ? "configuration" : ""};
  }
  auto s = f.run(p);
  CHECK(f.launcher.launched.size() == 6);
  CHECK(s.failed == 5);
  CHECK(s.ok == 1);
  CHECK(s.skipped == 0);
  CHECK(f.recorder.status[{p.runs[5].hash, 0}] == "ok");
  for (int i = 0; i < 5; ++i) {
    CHECK(f.recorder.failure_class[{p.runs[static_cast<std::size_t>(i)].hash, 0}] ==
          "configuration");
  }
  CHECK(f.recorder.failure_class.count({p.runs[5].hash, 0}) == 0);  // ok: no class
  CHECK(checker.started.empty());
  CHECK(f.out.str().find("no longer using") == std::string::npos);
}

TEST_CASE("sweep: a configuration failure breaks a run of device failures",
          "[sweep][failure_class]") {
  Fixture f;
  f.options.max_consecutive_failures = 2;
  Plan p = six_runs();
  f.launcher.scripts[p.runs[0].name] = {"failed", 1, 0, false, "device"};
  f.launcher.scripts[p.runs[1].name] = {"failed", 1, 0, false, "configuration"};
  f.launcher.scripts[p.runs[2].name] = {"failed", 1, 0, false, "device"};
  auto s = f.run(p);
  CHECK(f.launcher.launched.size() == 6);
  CHECK(s.skipped == 0);
}

TEST_CASE("sweep: before retiring a GPU its health is checked; a healthy GPU stays in use",
          "[sweep][failure_class]") {
  Fixture f;
  f.options.max_consecutive_failures = 2;
  FakeChecker checker(f.clock);
  f.options.device_checker = &checker;
  Plan p = six_runs();
  f.launcher.scripts[p.runs[0].name] = {"failed", 1, 0, false, "device"};
  f.launcher.scripts[p.runs[1].name] = {"failed", 1, 0, false, "device"};
  f.launcher.scripts[p.runs[2].name] = {"failed", 1, 0, false, "device"};
  auto s = f.run(p);
  CHECK(checker.started == std::vector<std::string>{""});  // once, after the second
  REQUIRE(f.recorder.checks.size() == 1);
  CHECK(f.recorder.checks[0].second.healthy);
  CHECK(f.recorder.checks[0].second.detail == "scripted: works");
  CHECK(f.launcher.launched.size() == 6);  // the third failure starts a new count of one
  CHECK(s.skipped == 0);
  CHECK(s.ok == 3);
  CHECK(f.out.str().find("health check of cpu: healthy") != std::string::npos);
  CHECK(f.out.str().find("no longer using") == std::string::npos);
}

TEST_CASE("sweep: a GPU whose health check fails is retired, with the verdict recorded",
          "[sweep][failure_class]") {
  Fixture f;
  f.options.gpus = {"0", "1"};
  f.options.max_consecutive_failures = 2;
  FakeChecker checker(f.clock);
  checker.verdict = {false, "CUDA error: an illegal memory access was encountered"};
  f.options.device_checker = &checker;
  Plan p = six_runs();
  f.launcher.scripts[p.runs[0].name] = {"failed", 1, 0, false, "device"};
  f.launcher.scripts[p.runs[1].name] = {"ok", 100};
  f.launcher.scripts[p.runs[2].name] = {"failed", 1, 0, false, "device"};
  auto s = f.run(p);
  REQUIRE(f.recorder.checks.size() == 1);
  CHECK(f.recorder.checks[0].first == "0");
  CHECK_FALSE(f.recorder.checks[0].second.healthy);
  std::map<std::string, int> per_gpu;
  for (auto& [name, gpu] : f.launcher.launched) ++per_gpu[gpu];
  CHECK(per_gpu["0"] == 2);
  CHECK(per_gpu["1"] == 4);
  CHECK(s.skipped == 0);
  CHECK(f.out.str().find("no longer using gpu 0: 2 consecutive runs failed on it with device "
                         "errors, and its health check failed") != std::string::npos);
}

TEST_CASE("sweep: a crash (signal) is the device's failure, an exit code alone is not",
          "[sweep][failure_class]") {
  ResultDocument crash;
  crash.status = RunStatus::failed;
  crash.outcome = ProcessOutcome{std::nullopt, 11, ""};
  CHECK(classify_failure(crash) == FailureClass::device);
  ResultDocument exited = crash;
  exited.outcome = ProcessOutcome{3, std::nullopt, ""};
  CHECK(classify_failure(exited) == FailureClass::configuration);
  ResultDocument no_result = exited;
  no_result.outcome = ProcessOutcome{kEnvironmentExitCode, std::nullopt, ""};
  CHECK(classify_failure(no_result) == FailureClass::environment);
  ResultDocument sticky;
  sticky.status = RunStatus::failed;
  sticky.error = "CUDA error: unspecified launch failure";
  CHECK(classify_failure(sticky) == FailureClass::device);
  ResultDocument full = sticky;
  full.error = "cannot write /x/trace.json: No space left on device";
  CHECK(classify_failure(full) == FailureClass::environment);
  ResultDocument oom;
  oom.status = RunStatus::oom;
  CHECK(classify_failure(oom) == FailureClass::configuration);
  ResultDocument lost = sticky;
  lost.failure_class = FailureClass::configuration;
  lost.telemetry = {{"gpu_lost", true}};
  CHECK(classify_failure(lost) == FailureClass::device);
  ResultDocument ok;
  ok.status = RunStatus::ok;
  CHECK_FALSE(classify_failure(ok).has_value());
}

TEST_CASE(
    "sweep: a database that cannot be written stops the sweep with exit 4; the finished "
    "result is kept for the next resume",
    "[sweep][environment]") {
  Fixture f;
  Plan p = six_runs();
  int finishes = 0;
  f.recorder.on_finish = [&](const json&) {
    if (++finishes == 2) {
      throw EnvironmentFault("database is locked by another process: r.db (held longer than 10 s)",
                             /*database=*/true);
    }
  };
  auto s = f.run(p);
  CHECK(f.launcher.launched.size() == 2);  // nothing starts after the fault
  CHECK(s.exit_code() == kEnvironmentExitCode);
  CHECK(s.environment_fault.find("locked by another process") != std::string::npos);
  REQUIRE(f.launcher.kept.size() == 1);
  CHECK(f.launcher.kept[0]["run"]["name"] == p.runs[1].name);
  CHECK(f.launcher.kept[0]["status"] == "ok");
  CHECK(f.recorder.status.count({p.runs[2].hash, 0}) == 0);
  CHECK(finishes == 2);  // not tried again for anything else: each try could wait 10 s
}

TEST_CASE("sweep: a run whose files cannot be written stops the sweep; it is left to a resume",
          "[sweep][environment]") {
  Fixture f;
  f.options.gpus = {"0", "1"};
  Plan p = six_runs();
  f.launcher.scripts[p.runs[0].name] = {"ok", 30};
  f.launcher.fail_launch = [&](const RunSpec& spec) { return spec.name == p.runs[1].name; };
  auto s = f.run(p);
  CHECK(s.exit_code() == kEnvironmentExitCode);
  CHECK(f.launcher.launched.size() == 1);
  // The run in flight elsewhere is stopped, as for a signal; the spoiled one runs again later.
  CHECK(f.recorder.status[{p.runs[0].hash, 0}] == "interrupted");
  CHECK(f.recorder.status[{p.runs[1].hash, 0}] == "interrupted");
  CHECK(f.recorder.failure_class[{p.runs[1].hash, 0}] == "environment");
  CHECK(f.recorder.status.count({p.runs[2].hash, 0}) == 0);
  CHECK(s.skipped == 0);
  CHECK(f.out.str().find("no space left on spec.json") != std::string::npos);
}

TEST_CASE("sweep: a resume records a finished result left on disk instead of running it again",
          "[sweep][environment]") {
  Fixture f;
  Plan p = six_runs();
  f.recorder.prior[{p.runs[0].hash, 0}] = {"running", std::nullopt};
  f.recorder.prior[{p.runs[1].hash, 0}] = {"running", std::nullopt};
  f.launcher.left_on_disk[p.runs[0].name] = {
      {"format", "orch.result"},
      {"version", 2},
      {"status", "ok"},
      {"run", {{"name", p.runs[0].name}, {"hash", p.runs[0].hash}, {"repeat", 0}}},
      {"metrics", {{"images_per_s", 42.0}}}};
  auto s = f.run(p);
  CHECK(s.recovered == 1);
  CHECK(s.already_done == 1);
  CHECK(f.recorder.status[{p.runs[0].hash, 0}] == "ok");
  CHECK(f.recorder.stale == std::vector<std::string>{p.runs[1].name});
  CHECK(f.launcher.launched.size() == 5);
  CHECK(s.exit_code() == 0);
}

}  // namespace
}  // namespace orch::sweep

namespace orch::sweep {

TEST_CASE("sweep: the invocation's time adds up the phases of the runs that measured",
          "[sweep][time]") {
  Fixture f;
  Plan p = six_runs();
  f.options.gpus = {"0", "1"};
  const json phases = {{"startup_s", 1.0}, {"setup_s", 2.0}, {"warmup_s", 3.0},
                       {"measure_s", 4.0}, {"after_s", 0.5}, {"teardown_s", 0.5},
                       {"process_s", 11.0}};
  for (const auto& r : p.runs)
    f.launcher.scripts[r.name] = Script{"ok", 11, 100, false, {}, phases};
  // One run fails: it measured nothing, so its slot time counts whole, apart.
  f.launcher.scripts[p.runs[2].name] = Script{"failed", 5};
  auto s = f.run(p);
  CHECK(s.ok == 5);
  CHECK(s.time.runs == 5);
  CHECK(s.time.slots == 2);
  CHECK_FALSE(s.time.cpu);
  CHECK(s.time.phases.measure_s == Approx(20.0));
  CHECK(s.time.phases.warmup_s == Approx(15.0));
  CHECK(s.time.phases.startup_s == Approx(5.0));
  CHECK(s.time.phases.process_s == Approx(55.0));
  // The fake runs end on the 100 ms poll after their scripted time.
  CHECK(s.time.unmeasured_s == Approx(5.0).margin(0.2));
  // Two slots: 5 x 11 s + 5 s of runs take at least 30 s of wall time, and little more.
  CHECK(s.time.wall_s >= 30.0);
  CHECK(s.time.wall_s <= 34.0);
}

TEST_CASE("sweep: a CPU sweep's time is said to be on the CPU", "[sweep][time]") {
  Fixture f;
  auto s = f.run(six_runs());
  CHECK(s.time.cpu);
  CHECK(s.time.slots == 1);
  // No phases in the fake documents: their runs are counted as time that measured nothing.
  CHECK(s.time.runs == 0);
  CHECK(s.time.unmeasured_s == Approx(60.0).margin(1.0));
}

}  // namespace orch::sweep

namespace orch::sweep {

TEST_CASE("sweep: repeats run in rounds, every configuration once before any again",
          "[sweep][rounds]") {
  Fixture f;
  Plan p = test::plan_text(R"(name: s
base: {device: cpu, repeat: 3}
matrix:
  batch_size: [16, 32]
)");
  REQUIRE(p.runs.size() == 6);
  SECTION("in plan order") {
    f.run(p);
    std::vector<std::string> order;
    for (const auto& [name, gpu] : f.launcher.launched) order.push_back(name);
    CHECK(order == std::vector<std::string>{"b16", "b32", "b16", "b32", "b16", "b32"});
  }
  SECTION("fastest first within each round") {
    f.options.fast_first = true;
    for (const auto& r : p.runs) f.recorder.measured[r.hash] = r.batch_size == 32 ? 5.0 : 9.0;
    f.run(p);
    std::vector<std::string> order;
    for (const auto& [name, gpu] : f.launcher.launched) order.push_back(name);
    CHECK(order == std::vector<std::string>{"b32", "b16", "b32", "b16", "b32", "b16"});
  }
  SECTION("a resume runs what is left in rounds too") {
    f.recorder.prior[{p.runs[0].hash, 0}] = PriorRun{"ok", 10.0};
    f.run(p);
    REQUIRE(f.launcher.launched.size() == 5);
    CHECK(f.launcher.launched[0].first == "b32");
  }
}

}  // namespace orch::sweep
