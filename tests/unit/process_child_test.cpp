// The process library (orchestrator/src/process/): children started with pipes and read without
// blocking, exit statuses decoded, a stop that escalates from SIGTERM to SIGKILL, the subreaper
// ending what a child left behind while a live child stays, and signal handlers put back. Real
// processes (/bin/sh, sleep), no mocks.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "process/child.h"
#include "process/exit_status.h"
#include "process/leftovers.h"
#include "process/pipe_reader.h"
#include "process/signal_guard.h"

using namespace orch::process;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

ChildOptions shell(const std::string& script) {
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", script};
  return o;
}

// Reads the child's stdout and stderr until both are closed (10 s at most).
void read_all(Child& c, std::string& out, std::string& err) {
  PipeReader reader;
  if (c.stdout_fd() >= 0) reader.add(c.stdout_fd(), [&](std::string_view t) { out += t; });
  if (c.stderr_fd() >= 0) reader.add(c.stderr_fd(), [&](std::string_view t) { err += t; });
  REQUIRE(reader.read_until(Clock::now() + 10s));
}

// The first line the child writes on stdout (it says it is ready).
std::string first_line(Child& c) {
  std::string out;
  PipeReader reader;
  reader.add(c.stdout_fd(), [&](std::string_view t) { out += t; });
  const auto deadline = Clock::now() + 10s;
  while (out.find('\n') == std::string::npos && Clock::now() < deadline && reader.open())
    reader.read_for(100ms);
  return out.substr(0, out.find('\n'));
}

bool gone(pid_t pid) {
  // A zombie still answers kill(0): only its /proc state tells.
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (::kill(pid, 0) != 0 || !std::getline(stat, line) || line.find(") Z ") != std::string::npos)
      return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

int g_seen_first = 0, g_seen_second = 0;
void first_handler(int) { ++g_seen_first; }
void second_handler(int) { ++g_seen_second; }

}  // namespace

TEST_CASE("process: a child's stdout and stderr come through their pipes, its exit code with them",
          "[process]") {
  ChildOptions o = shell("printf 'to out\\n'; printf 'to err' >&2; printf more; exit 3");
  o.out = Stdio::pipe();
  o.err = Stdio::pipe();
  Child c(o);
  std::string out, err;
  read_all(c, out, err);
  const ExitStatus st = c.wait();
  CHECK(out == "to out\nmore");
  CHECK(err == "to err");
  CHECK(st.exit_code == 3);
  CHECK(st.signal == 0);
  CHECK_FALSE(st.success());
  CHECK(st.describe() == "exit code 3");
}

TEST_CASE("process: what is written to a child's stdin pipe reaches it", "[process]") {
  ChildOptions o;
  o.argv = {"cat"};
  o.search_path = true;
  o.in = Stdio::pipe();
  o.out = Stdio::pipe();
  Child c(o);
  const std::string text = "line one\nline two\n";
  REQUIRE(::write(c.stdin_fd(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  c.close_stdin();  // cat ends at end-of-file
  std::string out, err;
  read_all(c, out, err);
  CHECK(out == text);
  CHECK(c.wait().success());
}

TEST_CASE("process: a child killed by a signal is decoded as that signal, not an exit code",
          "[process]") {
  Child c(shell("kill -SEGV $$; sleep 5"));
  const ExitStatus st = c.wait();
  CHECK(st.signal == SIGSEGV);
  CHECK(st.exit_code == -1);
  CHECK(st.describe() == "signal 11 (SIGSEGV)");
  REQUIRE(c.poll().has_value());  // kept: asked again, the same status
  CHECK(c.poll()->signal == SIGSEGV);
}

TEST_CASE("process: wait_for gives up at its timeout and sees the end once it comes", "[process]") {
  ChildOptions o = shell("echo ready; exec sleep 30");
  o.out = Stdio::pipe();
  Child c(o);
  REQUIRE(first_line(c) == "ready");
  const auto t0 = Clock::now();
  CHECK_FALSE(c.wait_for(200ms).has_value());
  CHECK(Clock::now() - t0 >= 200ms);
  CHECK_FALSE(c.poll().has_value());
  c.signal(SIGKILL);
  const auto st = c.wait_for(5s);
  REQUIRE(st.has_value());
  CHECK(st->signal == SIGKILL);
}

TEST_CASE("process: stop sends SIGTERM, and SIGKILL after the grace to a child that ignores it",
          "[process]") {
  SECTION("a child that ends on SIGTERM ends by it, well before the grace is over") {
    ChildOptions o = shell("echo ready; exec sleep 30");
    o.out = Stdio::pipe();
    Child c(o);
    REQUIRE(first_line(c) == "ready");
    const auto t0 = Clock::now();
    const ExitStatus st = c.stop(5s);
    CHECK(st.signal == SIGTERM);
    CHECK(Clock::now() - t0 < 4s);
  }
  SECTION("a child that ignores SIGTERM is killed after the grace, its process group with it") {
    // The trap is set before "ready": the SIGTERM finds it ignored. Its sleep is in its group.
    ChildOptions o = shell("trap '' TERM; sleep 30 & echo \"ready $!\"; wait");
    o.out = Stdio::pipe();
    Child c(o);
    const std::string line = first_line(c);
    REQUIRE(line.rfind("ready ", 0) == 0);
    const pid_t sleeper = static_cast<pid_t>(std::stol(line.substr(6)));
    const auto t0 = Clock::now();
    const ExitStatus st = c.stop(300ms);
    CHECK(st.signal == SIGKILL);
    CHECK(Clock::now() - t0 >= 300ms);
    CHECK(gone(sleeper));
  }
}

TEST_CASE("process: a program that cannot be started is a SpawnError naming it", "[process]") {
  ChildOptions o;
  o.argv = {"/nonexistent/orch-no-such-program"};
  SECTION("posix_spawn") {}
  SECTION("fork, for a child that dies with its parent") { o.die_with_parent = true; }
  try {
    Child c(o);
    FAIL("started");
  } catch (const SpawnError& e) {
    CHECK(e.step() == SpawnError::Step::exec);
    CHECK(e.code().value() == ENOENT);
    CHECK(std::string(e.what()).find("cannot start /nonexistent/orch-no-such-program") == 0);
  }
}

TEST_CASE("process: a child started by fork (die_with_parent) runs with its pipes and status",
          "[process]") {
  ChildOptions o = shell("echo $PROCESS_TEST_WORD; exit 5");
  o.env["PROCESS_TEST_WORD"] = "forked";
  o.out = Stdio::pipe();
  o.die_with_parent = true;
  o.own_group = false;
  Child c(o);
  std::string out, err;
  read_all(c, out, err);
  CHECK(out == "forked\n");
  CHECK(c.wait().exit_code == 5);
}

TEST_CASE("process: the subreaper ends what a child left behind and leaves a live child alone",
          "[process]") {
  REQUIRE(become_child_subreaper());
  CHECK(is_child_subreaper());
  ChildOptions live_options = shell("exec sleep 30");
  Child live(live_options);
  // The shell's background sleep outlives it: an orphan, now ours as the subreaper.
  ChildOptions o = shell("sleep 30 >/dev/null 2>&1 & echo $!");
  o.out = Stdio::pipe();
  Child parent(o);
  std::string out, err;
  read_all(parent, out, err);
  REQUIRE(parent.wait().success());
  const pid_t orphan = static_cast<pid_t>(std::stol(out));
  CHECK(is_live_child(live.pid()));
  CHECK_FALSE(is_live_child(parent.pid()));

  const auto left = end_leftover_children(500ms);
  REQUIRE(left.size() == 1);
  CHECK(left[0].pid == orphan);
  CHECK(left[0].command == "sleep");
  CHECK(gone(orphan));
  CHECK(describe_leftovers(left) == "1 process (pid " + std::to_string(orphan) + " sleep)");
  // The live child was not touched, and its status is still its owner's to read.
  CHECK_FALSE(live.poll().has_value());
  live.signal(SIGTERM);
  CHECK(live.wait().signal == SIGTERM);
}

TEST_CASE("process: a signal guard installs its handler and puts the previous one back",
          "[process]") {
  struct sigaction first {};
  first.sa_handler = first_handler;
  sigemptyset(&first.sa_mask);
  struct sigaction before {};
  REQUIRE(::sigaction(SIGUSR1, &first, &before) == 0);
  g_seen_first = g_seen_second = 0;
  {
    SignalGuard guard(SIGUSR1, second_handler);
    CHECK(guard.installed());
    ::raise(SIGUSR1);
    CHECK(g_seen_second == 1);
    CHECK(g_seen_first == 0);
  }
  ::raise(SIGUSR1);
  CHECK(g_seen_first == 1);
  CHECK(g_seen_second == 1);

  SECTION("an ignored signal stays ignored when the guard is told to keep it") {
    ::signal(SIGUSR1, SIG_IGN);
    {
      SignalGuard guard(SIGUSR1, second_handler, SignalGuard::WhenIgnored::keep);
      CHECK_FALSE(guard.installed());
      ::raise(SIGUSR1);
      CHECK(g_seen_second == 1);
    }
    struct sigaction now {};
    ::sigaction(SIGUSR1, nullptr, &now);
    CHECK(now.sa_handler == SIG_IGN);
  }
  ::sigaction(SIGUSR1, &before, nullptr);
}

TEST_CASE("process: a tail keeps the last bytes from a line start", "[process]") {
  TailBuffer tail(10);
  tail.append("first line\nsecond\n");
  tail.append("third\n");
  CHECK(tail.text() == "third\n");
  TailBuffer whole(100);
  whole.append("a\nb\n");
  CHECK(whole.text() == "a\nb\n");
}

// What a child started with every signal at its default has ignored, from /proc: the mask of
// SigIgn, printed by the hidden case below, which the case after it runs under `trap '' HUP`.
TEST_CASE("process: (helper) print a default-signals child's ignored signals", "[.sighup_child]") {
  for (const bool forked : {false, true}) {  // posix_spawn, and fork for die_with_parent
    ChildOptions o = shell("grep SigIgn /proc/self/status");
    o.out = Stdio::pipe();
    o.die_with_parent = forked;
    Child c(o);
    std::string out, err;
    read_all(c, out, err);
    c.wait();
    std::cout << out;
  }
}

TEST_CASE("process: a signal ignored when orch started (nohup's SIGHUP) stays ignored in children",
          "[process]") {
  char self[4096] = {};
  REQUIRE(::readlink("/proc/self/exe", self, sizeof self - 1) > 0);
  const std::string cmd = std::string("trap '' HUP; exec '") + self + "' '[.sighup_child]' 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[512];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  ::pclose(pipe);
  INFO(out);
  int children = 0;
  for (auto at = out.find("SigIgn:"); at != std::string::npos; at = out.find("SigIgn:", at + 1)) {
    ++children;
    const unsigned long long ignored = std::stoull(out.substr(at + 7), nullptr, 16);
    CHECK((ignored & (1ull << (SIGHUP - 1))) != 0);  // nohup's SIGHUP: still ignored
    // What this test process did not ignore at its start is at its default.
    CHECK((ignored & (1ull << (SIGTERM - 1))) == 0);
  }
  CHECK(children == 2);
}
