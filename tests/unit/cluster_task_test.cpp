// The generated sbatch script run by bash as Slurm would run one array task, with a fake
// `orch` (a shell script) and a fake `scontrol` in PATH: the run's result is where the index
// says; SIGTERM (Slurm's warning before the time limit, or preemption) stops the run, records
// it as interrupted and requeues at most MAX_REQUEUES times; a crash is recorded as failed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "cluster/slurm_script.h"
#include "unit/cluster_test_support.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

// A stand-in for `orch exec`: FAKE_MODE=ok writes an ok document, hang sleeps (after leaving a
// marker), crash exits 139 without a document; --write-outcome writes that status.
constexpr const char* kFakeOrch = R"SH(#!/bin/bash
out=; outcome=; reason=
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --write-outcome) outcome="$2"; shift ;;
    --reason) reason="$2"; shift ;;
  esac
  shift
done
if [ -n "$outcome" ]; then
  printf '{"format":"orch.result","status":"%s","error":"%s"}\n' "$outcome" "$reason" > "$out"
  exit 0
fi
case "$FAKE_MODE" in
  ok) printf '{"format":"orch.result","status":"ok"}\n' > "$out" ;;
  hang) touch "$MARKER"; exec sleep 1000 ;;
  crash) exit 139 ;;
esac
)SH";

struct Task {
  test::TempFolder tmp;
  fs::path script, bin, out;

  Task() {
    bin = tmp.path / "bin dir";
    fs::create_directories(bin);
    write_exe(bin / "orch", kFakeOrch);
    write_exe(bin / "scontrol", "#!/bin/bash\necho \"$@\" >> \"$SCONTROL_LOG\"\n");
    cluster::SlurmScriptInput in;
    in.sweep = "s";
    in.orch_binary = (bin / "orch").string();
    in.dir = (tmp.path / "sub dir").string();
    in.result_names = {"aaa-r0"};
    fs::create_directories(tmp.path / "sub dir" / "specs");
    script = tmp.path / "task.sh";
    write_exe(script, cluster::slurm_script(in));
    out = tmp.path / "sub dir" / "results" / "aaa-r0.json";
  }

  static void write_exe(const fs::path& p, const std::string& text) {
    std::ofstream(p) << text;
    fs::permissions(p, fs::perms::owner_all);
  }

  // Starts the script as a Slurm task would run; returns its pid.
  pid_t start(const std::string& mode, int restarts) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("SLURM_ARRAY_TASK_ID", "0", 1);
      setenv("SLURM_ARRAY_JOB_ID", "77", 1);
      setenv("SLURM_RESTART_COUNT", std::to_string(restarts).c_str(), 1);
      setenv("FAKE_MODE", mode.c_str(), 1);
      setenv("MARKER", (tmp.path / "started").c_str(), 1);
      setenv("SCONTROL_LOG", (tmp.path / "scontrol.log").c_str(), 1);
      setenv("PATH", (bin.string() + ":" + std::getenv("PATH")).c_str(), 1);
      execl("/bin/bash", "bash", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  }

  static int wait_exit(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  bool wait_for_marker() {
    for (int i = 0; i < 200; ++i) {
      if (fs::exists(tmp.path / "started")) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
};

TEST_CASE("cluster task: a run that ends writes its result where the index says", "[cluster]") {
  Task t;
  CHECK(Task::wait_exit(t.start("ok", 0)) == 0);
  REQUIRE(fs::exists(t.out));
  CHECK(test::read_text(t.out).find("\"status\":\"ok\"") != std::string::npos);
  CHECK(fs::exists(t.tmp.path / "sub dir" / "logs" / "task-0.log"));
}

TEST_CASE("cluster task: SIGTERM from Slurm records the run as interrupted and requeues it",
          "[cluster]") {
  Task t;
  const pid_t pid = t.start("hang", 0);
  REQUIRE(t.wait_for_marker());
  const auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  CHECK(Task::wait_exit(pid) == 0);
  CHECK(std::chrono::steady_clock::now() - t0 <
        std::chrono::seconds(10));  // not the sleep's 1000 s
  REQUIRE(fs::exists(t.out));
  const std::string doc = test::read_text(t.out);
  CHECK(doc.find("\"status\":\"interrupted\"") != std::string::npos);
  CHECK(doc.find("stopped by Slurm") != std::string::npos);
  CHECK(test::read_text(t.tmp.path / "scontrol.log") == "requeue 77_0\n");
}

TEST_CASE("cluster task: requeues are bounded", "[cluster]") {
  SECTION("at the last allowed restart, SIGTERM does not requeue again") {
    Task t;
    const pid_t pid = t.start("hang", 2);
    REQUIRE(t.wait_for_marker());
    kill(pid, SIGTERM);
    CHECK(Task::wait_exit(pid) == 0);
    CHECK(test::read_text(t.out).find("\"status\":\"interrupted\"") != std::string::npos);
    CHECK_FALSE(fs::exists(t.tmp.path / "scontrol.log"));
  }
  SECTION("past the bound, the run does not start at all") {
    Task t;
    CHECK(Task::wait_exit(t.start("ok", 3)) == 0);
    const std::string doc = test::read_text(t.out);
    CHECK(doc.find("\"status\":\"interrupted\"") != std::string::npos);
    CHECK(doc.find("requeued 3 times") != std::string::npos);
  }
}

TEST_CASE("cluster task: a run that dies without a document is recorded as failed", "[cluster]") {
  Task t;
  CHECK(Task::wait_exit(t.start("crash", 0)) == 139);
  const std::string doc = test::read_text(t.out);
  CHECK(doc.find("\"status\":\"failed\"") != std::string::npos);
  CHECK(doc.find("exit status 139") != std::string::npos);
}

}  // namespace
}  // namespace orch
