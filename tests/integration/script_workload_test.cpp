// Script workloads (`workload: {kind: script}`) through `orch sweep` for real on the CPU: tiny
// standard-library Python programs written here stand in for a training script, writing the
// report of the script protocol themselves (they do not use the orch_workload module), and
// each outcome a script can have lands in the database.
#include "runner/script_workload.h"

#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "integration/test_support.h"
#include "plan/fixed_catalog.h"
#include "plan/planner.h"
#include "storage/store.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using test::TempDir;

// What every test script starts with: the run's numbers from orch's variables, `--name value`
// arguments into ARGS, and report() writing the protocol's report atomically.
constexpr const char* kPrelude = R"PY(import json, os, sys, time
SPEC = json.load(open(os.environ["ORCH_RUN_SPEC"]))
BATCH = int(os.environ["ORCH_BATCH_SIZE"])
WARMUP = int(os.environ["ORCH_WARMUP_STEPS"])
MEASURE = int(os.environ["ORCH_MEASURE_STEPS"])
ARGS = {}
i = 1
while i < len(sys.argv):
    if sys.argv[i].startswith("--") and i + 1 < len(sys.argv):
        ARGS[sys.argv[i][2:]] = sys.argv[i + 1]
        i += 2
    else:
        i += 1

def report(step_ms, measure_s, counters=None, loss=1.0):
    n = len(step_ms)
    doc = {"format": "orch.script-report", "version": 1, "batch_size": BATCH, "device": "cpu",
           "metrics": {"images_per_s": BATCH * n / measure_s, "step_ms_mean": 1000 * measure_s / n,
                       "device_step_ms_mean": sum(step_ms) / n, "measure_s": measure_s,
                       "warmup_s": 0.0, "loss_first": loss, "loss_last": loss},
           "steps": [{"step": k, "step_ms": t, "data_wait_ms": 0.0, "loss": loss}
                     for k, t in enumerate(step_ms)],
           "environment": {"python_version": sys.version.split()[0],
                           "python_executable": sys.executable},
           "counters": counters or {}}
    path = os.environ["ORCH_SCRIPT_REPORT"]
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f)
    os.rename(path + ".tmp", path)

def timed_steps(seconds):
    for _ in range(WARMUP):
        time.sleep(seconds)
    times = []
    t0 = time.perf_counter()
    for _ in range(MEASURE):
        s = time.perf_counter()
        time.sleep(seconds)
        times.append(1000 * (time.perf_counter() - s))
    return times, time.perf_counter() - t0
)PY";

fs::path write_script(const fs::path& dir, const std::string& name, const std::string& body) {
  const fs::path p = dir / name;
  std::ofstream(p) << kPrelude << body;
  return p;
}

fs::path write_experiment(const fs::path& dir, const std::string& name, const std::string& base,
                          const std::string& matrix = "") {
  const fs::path p = dir / (name + ".yaml");
  std::ofstream out(p);
  out << "name: " << name << "\nbase:\n"
      << "  workload: {kind: script, command: \"" << name << ".py\", python: /usr/bin/python3}\n"
      << "  device: cpu\n  telemetry: {enabled: false}\n"
      << base;
  if (!matrix.empty()) out << "matrix:\n" << matrix;
  return p;
}

test::CommandResult sweep(const fs::path& db, const fs::path& file) {
  return test::run_orch("--db '" + db.string() + "' sweep '" + file.string() + "'");
}

std::vector<storage::RunRecord> runs_of(const fs::path& db, const std::string& sweep_name) {
  storage::Store store(db.string());
  const auto id = store.find_sweep(sweep_name);
  if (!id) return {};
  return store.runs(*id);
}

bool process_gone(pid_t pid) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end) {
    // A zombie still answers kill(0); its /proc status says Z.
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (::kill(pid, 0) != 0 || !std::getline(stat, line) || line.find(") Z ") != std::string::npos)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("script workload: step times, args and the configuration reach the database",
          "[script][sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  write_script(tmp.path(), "timed.py", R"PY(
times, measure_s = timed_steps(float(ARGS["sleep_ms"]) / 1000)
with open(ARGS["echo"] + "-" + ARGS["sleep_ms"], "w") as f:
    json.dump({"argv": sys.argv[1:], "config": SPEC["config"], "run": SPEC["run"],
               "pythonpath": os.environ.get("PYTHONPATH", ""),
               "device": os.environ["ORCH_DEVICE"]}, f)
report(times, measure_s)
)PY");
  const fs::path echo = tmp.path() / "echo";
  const auto file = write_experiment(tmp.path(), "timed",
                                     "  batch_size: 8\n  steps: {warmup: 1, measure: 6}\n"
                                     "  args: {echo: '" +
                                         echo.string() + "', flag: true}\n",
                                     "  args.sleep_ms: [20, 80]\n");
  const auto r = sweep(db, file);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto runs = runs_of(db, "timed");
  REQUIRE(runs.size() == 2);
  for (const auto& run : runs) {
    INFO(run.name << ": " << run.error);
    CHECK(run.status == "ok");
    const double sleep_ms = run.config["args"]["sleep_ms"].get<double>();
    const auto step_ms = run.metric("step_ms_mean");
    const auto images = run.metric("images_per_s");
    REQUIRE(step_ms);
    REQUIRE(images);
    // time.sleep sleeps at least as long as asked; a loaded machine adds some more.
    CHECK(*step_ms >= sleep_ms);
    CHECK(*step_ms < sleep_ms * 1.5 + 20);
    CHECK(*images == Approx(8 * 1000 / *step_ms).epsilon(0.01));
    CHECK(run.config["workload"]["kind"] == "script");
    CHECK_FALSE(run.config.contains("model"));  // the built-in trainer's keys are left out
    CHECK(run.config["workload"]["script_xxh128"].get<std::string>().size() == 32);
  }
  // The arguments (sorted by name, after the command's words) and the configuration.
  const auto seen = nlohmann::json::parse(test::slurp(echo.string() + "-20"));
  const std::vector<std::string> argv = seen["argv"];
  CHECK(argv ==
        std::vector<std::string>{"--echo", echo.string(), "--flag", "true", "--sleep_ms", "20"});
  CHECK(seen["config"]["args"]["sleep_ms"] == 20);
  CHECK(seen["config"]["batch_size"] == 8);
  CHECK(seen["config"]["steps"]["measure"] == 6);
  CHECK(seen["run"]["name"].get<std::string>().find("20") != std::string::npos);
  CHECK(seen["device"] == "cpu");
  CHECK_THAT(seen["pythonpath"].get<std::string>(), Contains("/python"));
}

TEST_CASE("script workload: a crash is failed with the exit code and the stderr tail",
          "[script][sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  write_script(tmp.path(), "crash.py", R"PY(
print("loading the model", file=sys.stderr)
raise ValueError("boom at step 3")
)PY");
  const auto r = sweep(db, write_experiment(tmp.path(), "crash", ""));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  const auto runs = runs_of(db, "crash");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "failed");
  CHECK(runs[0].error == "exit code 1: ValueError: boom at step 3");
  CHECK(runs[0].failure_class == "configuration");
  CHECK_THAT(runs[0].stderr_tail, Contains("Traceback"));
  CHECK_THAT(runs[0].stderr_tail, Contains("loading the model"));
}

TEST_CASE("script workload: exit 0 without a report is failed", "[script][sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  write_script(tmp.path(), "silent.py", "\nprint('done')\n");
  const auto r = sweep(db, write_experiment(tmp.path(), "silent", ""));
  INFO(r.output);
  const auto runs = runs_of(db, "silent");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "failed");
  CHECK(runs[0].error == "the script ended without a report (call orch_workload's finish())");
}

TEST_CASE("script workload: PyTorch's out-of-memory error is oom", "[script][sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  write_script(tmp.path(), "oom.py", R"PY(
print("Traceback (most recent call last):", file=sys.stderr)
print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", file=sys.stderr)
sys.exit(1)
)PY");
  const auto r = sweep(db, write_experiment(tmp.path(), "oom", "  batch_size: 512\n"));
  INFO(r.output);
  const auto runs = runs_of(db, "oom");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "oom");
  CHECK_THAT(runs[0].error, Contains("out of memory at batch size 512"));
  CHECK_THAT(runs[0].error, Contains("Tried to allocate 2.00 GiB"));
}

TEST_CASE("script workload: a hanging script times out and neither it nor its child survives",
          "[script][sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const fs::path pids = tmp.path() / "pids";
  write_script(tmp.path(), "hang.py", R"PY(
import subprocess
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(ARGS["pids"], "w") as f:
    f.write("%d %d" % (os.getpid(), child.pid))
time.sleep(600)
)PY");
  const auto file = write_experiment(tmp.path(), "hang",
                                     "  timeout: 3s\n  args: {pids: '" + pids.string() + "'}\n");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = sweep(db, file);
  INFO(r.output);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
  const auto runs = runs_of(db, "hang");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "timeout");
  pid_t script = 0, child = 0;
  std::istringstream(test::slurp(pids)) >> script >> child;
  REQUIRE(script > 0);
  REQUIRE(child > 0);
  CHECK(process_gone(script));
  CHECK(process_gone(child));
}

TEST_CASE("script workload: processes the script started in another session end with its run",
          "[script][sweep]") {
  // One child in a session of its own (start_new_session: setsid), one daemon made the classic
  // way (fork, setsid, fork, the middle one exits: an orphan outside every group of the run).
  // The script ends normally; neither may outlive the run, and the run stays ok.
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const fs::path pids = tmp.path() / "pids";
  write_script(tmp.path(), "escape.py", R"PY(
import subprocess
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                         start_new_session=True)
r, w = os.pipe()
middle = os.fork()
if middle == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode())
        time.sleep(300)
        os._exit(0)
    os._exit(0)
os.waitpid(middle, 0)
daemon = int(os.read(r, 32))
with open(ARGS["pids"], "w") as f:
    f.write("%d %d" % (child.pid, daemon))
times, s = timed_steps(0.001)
report(times, s)
)PY");
  const auto file = write_experiment(
      tmp.path(), "escape",
      "  steps: {warmup: 1, measure: 3}\n  args: {pids: '" + pids.string() + "'}\n");
  const auto r = sweep(db, file);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const auto runs = runs_of(db, "escape");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "ok");
  pid_t child = 0, daemon = 0;
  std::istringstream(test::slurp(pids)) >> child >> daemon;
  REQUIRE(child > 0);
  REQUIRE(daemon > 0);
  CHECK(process_gone(child));
  CHECK(process_gone(daemon));
  // The run's log says what was ended.
  const std::string log = runs[0].stderr_tail;
  INFO(log);
  CHECK(log.find("left 2 processes") != std::string::npos);
}

TEST_CASE("script workload: a daemon outlives an orch exec killed past the grace, not the sweep",
          "[script][sweep]") {
  // The program starts a daemon in a session of its own, then ignores SIGTERM: at the timeout
  // the sweep's SIGTERM (forwarded by exec) changes nothing, so after the grace the sweep kills
  // exec's process group. Exec is gone before it could end the daemon; the sweep, a child
  // subreaper, inherits the daemon and ends it, and the run's log and error name it.
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const fs::path pids = tmp.path() / "pids";
  write_script(tmp.path(), "stubborn.py", R"PY(
import signal, subprocess
daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                          start_new_session=True)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(ARGS["pids"], "w") as f:
    f.write("%d %d" % (os.getpid(), daemon.pid))
time.sleep(300)
)PY");
  const auto file = write_experiment(tmp.path(), "stubborn",
                                     "  timeout: 3s\n  args: {pids: '" + pids.string() + "'}\n");
  const auto r =
      test::run_orch("--db '" + db.string() + "' sweep '" + file.string() + "' --grace 1");
  INFO(r.output);
  pid_t script = 0, daemon = 0;
  std::istringstream(test::slurp(pids)) >> script >> daemon;
  REQUIRE(script > 0);
  REQUIRE(daemon > 0);
  const bool daemon_gone = process_gone(daemon);
  if (!daemon_gone) ::kill(daemon, SIGKILL);  // not left behind by a failing test either
  CHECK(daemon_gone);
  CHECK(process_gone(script));
  const auto runs = runs_of(db, "stubborn");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "timeout");
  // The program itself, SIGKILLed with exec, is normally reaped before the sweep looks: named
  // or not, the daemon is.
  const std::string daemon_named = "pid " + std::to_string(daemon) + " python";
  INFO(runs[0].stderr_tail);
  CHECK_THAT(runs[0].stderr_tail,
             Contains("orch: the run's process left ") && Contains(daemon_named));
  CHECK_THAT(runs[0].error, Contains("then SIGKILL after 1 s; the run's process left ") &&
                                Contains(daemon_named) &&
                                Contains("running when it ended; ended them"));
}

TEST_CASE("script workload: editing the script changes the hash, and a resume runs it again",
          "[script][sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const std::string body = "\ntimes, s = timed_steps(0.001)\nreport(times, s)\n";
  write_script(tmp.path(), "edit.py", body);
  const auto file = write_experiment(tmp.path(), "edit", "  steps: {warmup: 0, measure: 2}\n");
  const FixedCatalog catalog;
  const std::string before = make_plan(file.string(), catalog).runs.at(0).hash;
  auto r = sweep(db, file);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  r = sweep(db, file);
  CHECK_THAT(r.output, Contains("1 already finished, 0 to run"));

  write_script(tmp.path(), "edit.py", body + "# a comment changes the bytes\n");
  const std::string after = make_plan(file.string(), catalog).runs.at(0).hash;
  CHECK(after != before);
  // The sweep sees a configuration that changed under its name, and runs it once told to.
  r = sweep(db, file);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("1 configuration changed settings under the same names: edit") &&
                           Contains("    edit: workload.script_xxh128 "));
  r = test::run_orch("--db '" + db.string() + "' sweep '" + file.string() + "' --replan");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("0 already finished, 1 to run"));
  std::set<std::string> hashes;
  for (const auto& run : runs_of(db, "edit")) {
    CHECK(run.status == "ok");
    hashes.insert(run.config_hash);
  }
  CHECK(hashes == std::set<std::string>{before, after});
}

TEST_CASE("script workload: batch_size auto-largest probes the script with its batches",
          "[script][sweep]") {
  TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  const fs::path seen = tmp.path() / "batches";
  // A device that holds 100 images: larger batches fail as PyTorch does.
  write_script(tmp.path(), "fit.py", R"PY(
with open(ARGS["seen"], "a") as f:
    f.write("%d %d %d\n" % (BATCH, WARMUP, MEASURE))
if BATCH > 100:
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB", file=sys.stderr)
    sys.exit(1)
times, s = timed_steps(0.001)
report(times, s)
)PY");
  const auto file = write_experiment(
      tmp.path(), "fit",
      "  batch_size: auto-largest\n  steps: {warmup: 1, measure: 4}\n  args: {seen: '" +
          seen.string() + "'}\n");
  const auto r = sweep(db, file);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto runs = runs_of(db, "fit");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "ok");
  CHECK(runs[0].batch_size == 96);  // the largest multiple of 8 that fits, as for built-in runs
  CHECK(runs[0].batch_auto);
  const std::string batches = test::slurp(seen);
  INFO(batches);
  CHECK_THAT(batches, Contains("64 2 1\n"));   // a fit probe: 2 warm-up steps, 1 measured
  CHECK_THAT(batches, Contains("128 2 1\n"));  // did not fit
  CHECK_THAT(batches, Contains("96 1 4\n"));   // the run itself, at its own steps
}

TEST_CASE("script workload: what exec makes of a report, an exit and a signal", "[script]") {
  RunSpec spec;
  spec.batch_size = 32;
  const nlohmann::json good = {{"format", "orch.script-report"},
                               {"version", 1},
                               {"batch_size", 32},
                               {"metrics", {{"images_per_s", 100.0}, {"step_ms_mean", 320.0}}},
                               {"steps", {{{"step", 0}, {"step_ms", 320.0}, {"loss", 2.5}}}}};
  auto outcome = [&](int code, int sig, const std::string& tail,
                     const std::optional<nlohmann::json>& report) {
    ResultDocument doc;
    script_outcome(doc, spec, code, sig, tail, report, "");
    return doc;
  };
  ResultDocument d = outcome(0, 0, "", good);
  CHECK(d.status == RunStatus::ok);
  CHECK(d.metric("images_per_s") == 100.0);

  // JSON has no NaN: a loss the program could not write as a number is not finite.
  nlohmann::json nan = good;
  nan["steps"][0]["loss"] = nullptr;
  d = outcome(0, 0, "", nan);
  CHECK(d.status == RunStatus::diverged);
  nan["steps"][0]["loss"] = "inf";
  CHECK(outcome(0, 0, "", nan).status == RunStatus::diverged);

  nlohmann::json other = good;
  other["version"] = 2;
  d = outcome(0, 0, "", other);
  CHECK(d.status == RunStatus::failed);
  CHECK_THAT(*d.error, Contains("version 2 is not 1"));
  other = good;
  other["steps"] = nlohmann::json::array();
  CHECK_THAT(*outcome(0, 0, "", other).error, Contains("no measured step"));
  other = good;
  other["batch_size"] = 64;  // the program ignored the batch it was given
  CHECK_THAT(*outcome(0, 0, "", other).error, Contains("it ran batch 64, not the run's 32"));

  d = outcome(-1, 9, "loading\n", std::nullopt);
  CHECK(d.status == RunStatus::failed);
  CHECK(*d.error == "the script was killed by signal 9 (SIGKILL): loading");
  // The out-of-memory line is found above the traceback's last line.
  d = outcome(1, 0, "RuntimeError: CUDA out of memory. Tried to allocate 8 GiB\n  at x\n",
              std::nullopt);
  CHECK(d.status == RunStatus::oom);
  CHECK_THAT(*d.error, Contains("batch size 32"));
  CHECK_THAT(*d.error, Contains("Tried to allocate 8 GiB"));
}

}  // namespace orch
