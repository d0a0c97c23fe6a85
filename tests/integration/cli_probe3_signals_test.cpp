// A stop signal in a sweep's or a check's last moments, after the runs (or steps) have ended:
// while the summary and the ranking print, the locks are let go and the process tears down.
// The third held-out probe of issue 39 found orch killed by the signal there (exit 130 or 143)
// and `--check`'s temporary folder left behind. Now such a signal is a stop (exit 3) until the
// outcome is decided and is held off after it, so the exit is 3 or the decided 0, never a
// death by the signal, and nothing is left in TMPDIR.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "integration/test_support.h"
#include "process/child.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

using test::kTiny;
using test::write;

struct Try {
  process::ExitStatus status;
  std::string output;
};

// Starts orch with `args`, waits for `marker` in its output (printed once the runs have ended),
// then sends `sig` at once and waits for orch to end.
Try signal_after(const std::vector<std::string>& args, const std::string& marker, int sig,
                 const fs::path& out, const fs::path& tmpdir) {
  process::ChildOptions o;
  o.argv = {ORCH_BINARY};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = {{"CUDA_VISIBLE_DEVICES", ""}, {"TMPDIR", tmpdir.string()}};
  o.out = process::Stdio::file(out.string());
  process::Child orch(o);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline &&
         test::slurp(out).find(marker) == std::string::npos && !orch.poll()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  orch.signal(sig);
  return {orch.wait(), test::slurp(out)};
}

}  // namespace

TEST_CASE("a signal as a sweep or a check ends is exit 3 or 0, never a death by the signal",
          "[cli][signals]") {
  test::TempDir tmp;
  const fs::path yaml = tmp.path() / "tiny.yaml", tmpdir = tmp.path() / "tmp";
  write(yaml, kTiny);
  fs::create_directories(tmpdir);
  int tries = 0;
  for (const int sig : {SIGINT, SIGTERM, SIGINT, SIGTERM}) {
    const std::string db = (tmp.path() / ("r" + std::to_string(tries) + ".db")).string();
    ++tries;
    // The summary line comes after every run is recorded; the ranking and teardown follow.
    const Try s = signal_after({"--db", db, "sweep", yaml.string()}, "\nsweep tiny: ", sig,
                               tmp.path() / "sweep.out", tmpdir);
    INFO("sweep, signal " << sig << ": " << s.status.describe() << "\n" << s.output);
    CHECK(s.status.signal == 0);
    CHECK((s.status.exit_code == 0 || s.status.exit_code == 3));
    CHECK_THAT(s.output, Contains("1 ok"));

    // The check's last line comes before its temporary folder is removed.
    const Try c = signal_after({"plan", yaml.string(), "--check"}, "trained a step", sig,
                               tmp.path() / "check.out", tmpdir);
    INFO("plan --check, signal " << sig << ": " << c.status.describe() << "\n" << c.output);
    CHECK(c.status.signal == 0);
    CHECK((c.status.exit_code == 0 || c.status.exit_code == 3));
    CHECK(fs::is_empty(tmpdir));
  }
}
