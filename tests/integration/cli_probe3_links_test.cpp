// The third held-out probe of issue 39, its "never write through what a path really is" half:
// a link planted at a folder orch makes inside its own (the workers' logs, a submission's
// specs), a hard link planted at a file orch writes in place (a run's files and logs, the lock
// files, the database's -shm) and a FIFO at a submission's index. The victim never changes, the
// command names the path and stops, and nothing waits on a FIFO.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <optional>

#include "integration/own_lock_folder.h"
#include "integration/test_support.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

using test::first_run_folder;
using test::kTiny;
using test::q;
using test::write;

using test::OwnLockFolder;

}  // namespace

TEST_CASE("a link planted at the workers' log folder is refused, nothing written in its target",
          "[cli][sweep]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "r.db", victims = tmp.path() / "victims";
  fs::create_directories(victims);
  write(victims / "worker-1.log", "keep me");
  fs::create_directories(db.string() + ".runs/tiny");
  const fs::path workers = db.string() + ".runs/tiny/workers";
  fs::create_symlink(victims, workers);
  auto r = test::run_orch("--db " + q(db) + " sweep " + q(tmp.path() / "tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 4);  // the surroundings' fault: the sweep stops, resumable
  CHECK_THAT(r.output, Contains(workers.string()) && Contains("symbolic link"));
  CHECK(test::slurp(victims / "worker-1.log") == "keep me");
  CHECK(std::distance(fs::directory_iterator(victims), fs::directory_iterator()) == 1);
}

TEST_CASE("a hard link planted at a run's file or log is refused, the file's other name untouched",
          "[cli][sweep]") {
  test::TempDir tmp;
  const std::string process = std::string(kTiny) + "  isolation: process\n";
  write(tmp.path() / "tiny.yaml", kTiny);
  write(tmp.path() / "process.yaml", process);
  const fs::path victim = tmp.path() / "victim";
  struct Case {
    std::string experiment, file;
  };
  int i = 0;
  for (const Case& c : std::vector<Case>{{"tiny.yaml", "spec.json"},
                                         {"tiny.yaml", "stderr.log"},
                                         {"process.yaml", "stdout.log"},
                                         {"process.yaml", "stderr.log"}}) {
    const fs::path db = tmp.path() / ("r" + std::to_string(i++) + ".db");
    const fs::path run_dir =
        db.string() + ".runs/tiny/" + first_run_folder(tmp.path() / c.experiment);
    fs::create_directories(run_dir);
    write(victim, "keep me");
    fs::create_hard_link(victim, run_dir / c.file);
    auto r = test::run_orch("--db " + q(db) + " sweep " + q(tmp.path() / c.experiment));
    INFO(c.experiment << " " << c.file << ": " << r.output);
    CHECK(r.exit_code == 4);
    CHECK_THAT(r.output, Contains((run_dir / c.file).string()) && Contains("hard link"));
    CHECK(test::slurp(victim) == "keep me");
    fs::remove(run_dir / c.file);
  }
}

TEST_CASE("a hard link planted at a lock file or at the database's -shm is refused, untouched",
          "[cli][device_lock]") {
  test::TempDir tmp;
  const OwnLockFolder locks(tmp.path() / "locks");
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path victim = tmp.path() / "victim";
  const auto sweep = [&](const fs::path& db) {
    return test::run_orch("--db " + q(db) + " sweep " + q(tmp.path() / "tiny.yaml"));
  };
  struct Case {
    fs::path planted, db;
  };
  for (const Case& c : std::vector<Case>{
           {tmp.path() / "a.db.tiny.lock", tmp.path() / "a.db"},           // the sweep's lock
           {tmp.path() / "locks" / "orch-cpu.lock", tmp.path() / "b.db"},  // the CPU's
           {tmp.path() / "c.db-shm", tmp.path() / "c.db"},                 // SQLite's shared memory
       }) {
    const fs::path& planted = c.planted;
    write(victim, "keep me");
    fs::create_hard_link(victim, planted);
    auto r = sweep(c.db);
    INFO(planted << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains(planted.string()) && Contains("hard link"));
    CHECK(test::slurp(victim) == "keep me");
    fs::remove(planted);
  }
}

TEST_CASE("submit: a link at its specs folder and a FIFO at its index are refused, not followed",
          "[cli][slurm]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "r.db", folder = db.string() + ".slurm/tiny";
  const fs::path victims = tmp.path() / "victims";
  fs::create_directories(victims);
  write(victims / "0.json", "keep me");
  write(victims / "other.json", "keep me too");
  fs::create_directories(folder);
  fs::create_symlink(victims, folder / "specs");
  const std::string submit =
      "timeout 60 '" + std::string(ORCH_BINARY) + "' --db " + q(db) + " submit --slurm --dry-run ";
  auto r = test::run_command(submit + q(tmp.path() / "tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains((folder / "specs").string()) && Contains("symbolic link"));
  CHECK(test::slurp(victims / "0.json") == "keep me");
  CHECK(test::slurp(victims / "other.json") == "keep me too");
  fs::remove(folder / "specs");

  // A FIFO at index.json: named at once, never opened for a reader that does not come.
  REQUIRE(::mkfifo((folder / "index.json").c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  auto f = test::run_command(submit + q(tmp.path() / "tiny.yaml"));
  INFO(f.output);
  CHECK(f.exit_code != 0);
  CHECK(f.exit_code != 124);  // not killed by the timeout
  CHECK_THAT(f.output, Contains((folder / "index.json").string()) && Contains("FIFO"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  CHECK(fs::is_fifo(folder / "index.json"));
}

TEST_CASE("submit: a device or folder at its script's name is refused, never written or chmod'ed",
          "[cli][slurm]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "r.db", folder = db.string() + ".slurm/tiny";
  const fs::path script = folder / "submit.sbatch";
  fs::create_directories(folder);
  const std::string submit =
      "--db " + q(db) + " submit --slurm --dry-run " + q(tmp.path() / "tiny.yaml");
  // A device node, where this test may make one: a copy of /dev/null's.
  if (::geteuid() == 0 && ::mknod(script.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) {
    struct stat before {};
    REQUIRE(::lstat(script.c_str(), &before) == 0);
    auto r = test::run_orch(submit);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains(script.string() + " is not a regular file"));
    struct stat st {};
    REQUIRE(::lstat(script.c_str(), &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    CHECK(st.st_mode == before.st_mode);  // not made executable
    fs::remove(script);
  } else {
    WARN("no device node made without root; the folder case only");
  }
  fs::create_directories(script);
  auto r = test::run_orch(submit);
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains(script.string() + " is not a regular file"));
  CHECK(fs::is_empty(script));
}
