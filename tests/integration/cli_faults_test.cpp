// The orch binary against hostile or unlucky surroundings: inputs that are files but not what
// they seem, plans far over the limit, a second writer through another spelling of the
// database, read commands given a foreign SQLite file or read-only media, outputs aimed at
// the database or at a file of another kind.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "integration/test_support.h"
#include "process/child.h"
#include "storage/store.h"
#include "sweep/device_lock.h"
#include "sweep/sweep_lock.h"
#include "unit/store_test_support.h"

using namespace orch;
using Catch::Matchers::Contains;
using test::kTiny;
using test::q;
using test::write;

namespace {

namespace fs = std::filesystem;

// An orch database with one sweep of two runs, written by the store directly.
void make_results(const fs::path& db) {
  storage::Store store(db.string());
  const auto id = store.open_sweep("s", "exp", "exp.yaml");
  // Hashes shaped like real ones: the report picks its before/after pair by hash prefix.
  store.record(id, test::result_doc("fast", "a1b2c3d4e5f60718", 0, "ok", 1500));
  store.record(id, test::result_doc("slow", "b2c3d4e5f6071829", 0, "ok", 1000));
}

}  // namespace

TEST_CASE("orch plan /dev/zero fails at once, naming the path", "[cli]") {
  const auto start = std::chrono::steady_clock::now();
  auto r = test::run_orch("plan /dev/zero");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("/dev/zero: cannot read the file: it is a character device"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("an experiment file over 1 MiB is refused with the limit", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "big.yaml", std::string(kTiny) + "# " + std::string(2 << 20, 'x') + "\n");
  auto r = test::run_orch("plan " + q(tmp.path() / "big.yaml"));
  INFO(r.output.substr(0, 2000));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("big.yaml: the file is ") && Contains("1048576 bytes (1 MiB)"));
}

TEST_CASE("a negative --max-runs is an error, not 'no limit'", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  auto r = test::run_orch("plan " + q(tmp.path() / "tiny.yaml") + " --max-runs -1");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--max-runs"));
  CHECK(r.output.find("1 run (") == std::string::npos);  // it did not plan
}

TEST_CASE("a matrix far over --max-runs is refused before it is expanded", "[cli]") {
  test::TempDir tmp;
  std::string seeds, batches;
  for (int i = 0; i < 1000; ++i) {
    seeds += (i ? ", " : "") + std::to_string(i);
    batches += (i ? ", " : "") + std::to_string(i + 1);
  }
  write(tmp.path() / "huge.yaml",
        std::string(kTiny) + "matrix:\n  seed: [" + seeds + "]\n  batch_size: [" + batches + "]\n");
  const auto start = std::chrono::steady_clock::now();
  auto r = test::run_orch("plan " + q(tmp.path() / "huge.yaml"));
  const auto took = std::chrono::steady_clock::now() - start;
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("1000000 runs") && Contains("more than the limit of 10000"));
  CHECK(took < std::chrono::seconds(20));
}

// A matrix of seeds x batches on kTiny.
std::string matrix_of(int seeds, int batches) {
  std::string s, b;
  for (int i = 0; i < seeds; ++i) s += (i ? ", " : "") + std::to_string(i);
  for (int i = 0; i < batches; ++i) b += (i ? ", " : "") + std::to_string(i + 1);
  return std::string(kTiny) + "matrix:\n  seed: [" + s + "]\n  batch_size: [" + b + "]\n";
}

TEST_CASE("a plan bigger than memory could hold is exit 2 before it is built", "[cli]") {
  // --max-runs raised to allow a million runs, and a data limit (ulimit -d, 3 GB) far under
  // what a million runs would take: the planner refuses at once, instead of growing until the
  // allocator fails (bad_alloc, exit 134) or the OOM killer ends it.
  test::TempDir tmp;
  write(tmp.path() / "huge.yaml", matrix_of(1000, 1000));
  const auto start = std::chrono::steady_clock::now();
  auto r = test::run_command("ulimit -d 3000000; '" + std::string(ORCH_BINARY) + "' plan " +
                             q(tmp.path() / "huge.yaml") + " --max-runs 2000000");
  const auto took = std::chrono::steady_clock::now() - start;
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("huge.yaml:") && Contains("the plan has 1000000 runs") &&
                           Contains("of memory") && Contains("narrow the matrix"));
  CHECK(took < std::chrono::seconds(20));
  // Under the same limit, a plan that fits is still built.
  write(tmp.path() / "fits.yaml", matrix_of(1000, 1));
  auto ok = test::run_command("ulimit -d 3000000; '" + std::string(ORCH_BINARY) + "' plan " +
                              q(tmp.path() / "fits.yaml"));
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("under ulimit -v, a plan too big for the address space left is exit 2, no bad_alloc",
          "[cli]") {
  // What orch maps once its plugins are loaded and a plan is made: read from an `orch plan
  // --check` that waits for the CPU, which this test holds.
  test::TempDir tmp;
  write(tmp.path() / "one.yaml", kTiny);
  std::atomic<bool> no_stop{false};
  std::ostringstream ignored;
  auto held = sweep::DeviceLocks::acquire({{"cpu", "the CPU"}}, "orch test", /*wait=*/false,
                                          ignored, no_stop);
  REQUIRE(held);
  // No GPU for any orch here: its check then waits for the CPU, and no CUDA context reserves
  // address space (the tests run on the CPU).
  process::ChildOptions o;
  o.argv = {ORCH_BINARY, "plan", (tmp.path() / "one.yaml").string(), "--check"};
  o.env = {{"CUDA_VISIBLE_DEVICES", ""}};
  const fs::path said = tmp.path() / "check.out";
  o.out = process::Stdio::file(said.string());
  process::Child check(o);
  long long mapped_kib = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline &&
         test::slurp(said).find("waiting for the CPU") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  {
    std::ifstream status("/proc/" + std::to_string(check.pid()) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmSize:", 0) == 0) mapped_kib = std::atoll(line.c_str() + 7);
    }
  }
  check.signal(SIGTERM);
  check.wait();
  held.reset();
  INFO(test::slurp(said));
  REQUIRE(mapped_kib > 0);

  // 1 GiB of address space beyond that: a plan may take half, some tens of thousands of runs.
  const std::string limit = "ulimit -v " + std::to_string(mapped_kib + 1024 * 1024) +
                            "; CUDA_VISIBLE_DEVICES= '" + std::string(ORCH_BINARY) + "' plan ";
  write(tmp.path() / "huge.yaml", matrix_of(1000, 1000));
  const auto start = std::chrono::steady_clock::now();
  auto r = test::run_command(limit + q(tmp.path() / "huge.yaml") + " --max-runs 2000000");
  INFO(r.output);
  CHECK(r.exit_code == 2);  // not 134 (bad_alloc) nor killed
  CHECK(r.output.find("bad_alloc") == std::string::npos);
  CHECK_THAT(r.output, Contains("the plan has 1000000 runs") && Contains("ulimit -v"));
  // What it says it can allocate is the address space left, not the machine's memory.
  std::smatch m;
  REQUIRE(std::regex_search(r.output, m, std::regex("can allocate about ([0-9.]+) (MiB|GiB)")));
  const double allocatable_mib = std::stod(m[1]) * (m[2] == "GiB" ? 1024 : 1);
  CHECK(allocatable_mib <= 1.1 * 1024);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  // Under the same limit, a plan of a thousand runs is built and printed.
  write(tmp.path() / "fits.yaml", matrix_of(1000, 1));
  auto ok = test::run_command(limit + q(tmp.path() / "fits.yaml"));
  INFO(ok.output.substr(0, 2000));
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.output, Contains("1000 runs"));
}

TEST_CASE("orch run takes the sweep's lock, through any spelling of the database", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  fs::create_directories(tmp.path() / "sub");
  const fs::path db = tmp.path() / "r.db";
  fs::create_symlink(db, tmp.path() / "link.db");
  // A sweep of the same name holds the lock of the real file.
  sweep::SweepLock held(sweep::lock_path(db.string(), "tiny"));
  for (const fs::path& spelling :
       {db, tmp.path() / "link.db", tmp.path() / "sub" / ".." / "r.db"}) {
    auto r = test::run_orch("--db " + q(spelling) + " run " + q(tmp.path() / "tiny.yaml"));
    INFO(spelling << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains("already running"));
    auto s = test::run_orch("--db " + q(spelling) + " sweep " + q(tmp.path() / "tiny.yaml"));
    INFO(s.output);
    CHECK(s.exit_code == 2);
    CHECK_THAT(s.output, Contains("already running"));
  }
  CHECK_FALSE(fs::exists(db));  // nothing was measured beside the running sweep
}

TEST_CASE("read commands never write: a foreign SQLite file is refused, untouched", "[cli]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "notes.db";
  {
    storage::Database foreign(db.string());
    foreign.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)");
    foreign.exec("INSERT INTO notes (text) VALUES ('keep me')");
  }
  const std::string before = test::slurp(db);
  const std::string dbarg = "--db " + q(db) + " ";
  const std::vector<std::string> commands = {"rank", "compare a b", "export --format csv",
                                             "report -o " + q(tmp.path() / "r.html")};
  for (const std::string& cmd : commands) {
    auto r = test::run_orch(dbarg + cmd);
    INFO(cmd << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains("is not an orch results database"));
  }
  CHECK(test::slurp(db) == before);  // no orch tables, no switch to WAL
  CHECK_FALSE(fs::exists(tmp.path() / "notes.db-wal"));
  storage::Database check(db.string());
  storage::Statement mode(check, "PRAGMA journal_mode");
  REQUIRE(mode.step());
  CHECK(mode.column_text(0) == "delete");
}

TEST_CASE("sweep and run refuse another program's SQLite database, untouched", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "notes.db";
  {
    storage::Database foreign(db.string());
    foreign.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)");
    foreign.exec("INSERT INTO notes (text) VALUES ('keep me')");
  }
  const std::string before = test::slurp(db);
  for (const std::string cmd : {"sweep", "run"}) {
    auto r = test::run_orch("--db " + q(db) + " " + cmd + " " + q(tmp.path() / "tiny.yaml"));
    INFO(cmd << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains("is not an orch results database (it has tables of its own"));
  }
  CHECK(test::slurp(db) == before);
  CHECK_FALSE(fs::exists(tmp.path() / "notes.db-wal"));
  CHECK_FALSE(fs::exists(tmp.path() / "notes.db.runs"));
}

TEST_CASE("submit writes nothing through a link planted at DB.slurm or its sweep's folder",
          "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path elsewhere = tmp.path() / "elsewhere";
  fs::create_directories(elsewhere);
  const fs::path db = tmp.path() / "s.db";
  const fs::path planted[] = {fs::path(db.string() + ".slurm"),
                              fs::path(db.string() + ".slurm") / "tiny"};
  for (const fs::path& link : planted) {
    if (link.parent_path() != tmp.path()) fs::create_directories(link.parent_path());
    fs::create_directory_symlink(elsewhere, link);
    auto r = test::run_orch("--db " + q(db) + " submit --slurm --dry-run " +
                            q(tmp.path() / "tiny.yaml"));
    INFO(link << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains("symbolic link"));
    CHECK(fs::is_empty(elsewhere));
    fs::remove(link);
  }
}

TEST_CASE("submit writes nothing through a link planted at a temporary name in its folder",
          "[cli]") {
  // A fixed PATH.tmp beside each file it writes was once opened following a link.
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path victim = tmp.path() / "victim.txt";
  write(victim, "keep me\n");
  const fs::path db = tmp.path() / "s.db";
  const fs::path folder = fs::path(db.string() + ".slurm") / "tiny";
  fs::create_directories(folder / "specs");
  for (const char* name : {"submit.sbatch.tmp", "index.json.tmp", "specs/0.json.tmp"})
    fs::create_symlink(victim, folder / name);
  auto r =
      test::run_orch("--db " + q(db) + " submit --slurm --dry-run " + q(tmp.path() / "tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(test::slurp(victim) == "keep me\n");
  CHECK(fs::is_regular_file(folder / "submit.sbatch"));
  CHECK(fs::is_regular_file(folder / "index.json"));
}

TEST_CASE("a --db that is a FIFO or a folder is refused at once, by read and write commands",
          "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path fifo = tmp.path() / "f.db", folder = tmp.path() / "d.db";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_directories(folder);
  for (const fs::path& db : {fifo, folder}) {
    for (const std::string& cmd :
         std::vector<std::string>{"sweeps", "sweep " + q(tmp.path() / "tiny.yaml")}) {
      auto r = test::run_orch("--db " + q(db) + " " + cmd);  // a FIFO once hung here
      INFO(db << " " << cmd << ": " << r.output);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.output,
                 Contains(fs::is_directory(db) ? "it is a folder" : "it is a FIFO (named pipe)"));
    }
  }
  CHECK(fs::is_fifo(fifo));
  CHECK(fs::is_empty(folder));
}

TEST_CASE("read commands read a database on read-only media", "[cli]") {
  test::TempDir tmp;
  fs::create_directories(tmp.path() / "data");
  fs::create_directories(tmp.path() / "ro");
  const fs::path db = tmp.path() / "data" / "r.db";
  make_results(db);  // WAL mode: a plain read-only open would need to create r.db-shm
  // A read-only bind mount in a mount namespace of its own; skipped where that is not allowed.
  const std::string mount = "unshare -m sh -c \"mount --bind " + q(tmp.path() / "data") + " " +
                            q(tmp.path() / "ro") + " && mount -o remount,ro,bind " +
                            q(tmp.path() / "ro") + " && ";
  auto probe = test::run_command(mount + "echo mounted\"");
  if (probe.output.find("mounted") == std::string::npos) {
    WARN("no read-only bind mount here (" << probe.output << "); skipped");
    return;
  }
  auto r = test::run_command(mount + "'" + ORCH_BINARY + "' --db " + q(tmp.path() / "ro" / "r.db") +
                             " rank\"");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("fast") && Contains("slow"));
}

TEST_CASE("export -o and report -o never replace the database or a file of another kind", "[cli]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  make_results(db);
  fs::create_symlink(db, tmp.path() / "link.db");
  const std::string dbarg = "--db " + q(db) + " ";
  const std::string db_before = test::slurp(db);
  for (const fs::path& target : {db, tmp.path() / "link.db"}) {
    for (const std::string cmd :
         {"export --format csv -o ", "export --format json -o ", "report -o "}) {
      auto r = test::run_orch(dbarg + cmd + q(target));
      INFO(cmd << target << ": " << r.output);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.output, Contains("it is the results database"));
    }
  }
  CHECK(test::slurp(db) == db_before);
  CHECK(fs::is_symlink(tmp.path() / "link.db"));

  SECTION("another SQLite database or a file of another kind is refused") {
    const fs::path other = tmp.path() / "other.db";
    {
      storage::Database d(other.string());
      d.exec("CREATE TABLE t (x)");
    }
    const fs::path yaml = tmp.path() / "experiment.yaml";
    write(yaml, kTiny);
    for (const fs::path& target : {other, yaml}) {
      for (const std::string cmd : {"export --format csv -o ", "report -o "}) {
        auto r = test::run_orch(dbarg + cmd + q(target));
        INFO(cmd << target << ": " << r.output);
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.output, Contains("refusing to overwrite " + target.string()));
      }
    }
    CHECK(test::slurp(yaml) == kTiny);
  }
  SECTION("an earlier output of the same kind is replaced; a new file is written") {
    for (const std::string ext : {"csv", "json"}) {
      const fs::path out = tmp.path() / ("runs." + ext);
      auto first = test::run_orch(dbarg + "export --format " + ext + " -o " + q(out));
      INFO(first.output);
      CHECK(first.exit_code == 0);
      auto again = test::run_orch(dbarg + "export --format " + ext + " -o " + q(out));
      INFO(again.output);
      CHECK(again.exit_code == 0);
    }
    const fs::path html = tmp.path() / "report.html";
    for (int i = 0; i < 2; ++i) {
      auto r = test::run_orch(dbarg + "report -o " + q(html));
      INFO(r.output);
      CHECK(r.exit_code == 0);
    }
    // A CSV is not a report, nor a report a CSV.
    CHECK(test::run_orch(dbarg + "report -o " + q(tmp.path() / "runs.csv")).exit_code == 2);
    CHECK(test::run_orch(dbarg + "export --format csv -o " + q(html)).exit_code == 2);
  }
}

TEST_CASE("export -o and report -o: a write that fails names the path and errno, exit 4, no file",
          "[cli]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  make_results(db);
  for (const auto& [cmd, name] :
       {std::pair<std::string, std::string>{"export --format csv -o ", "runs.csv"},
        {"export --format json -o ", "runs.json"},
        {"report -o ", "report.html"}}) {
    const fs::path out = tmp.path() / name;
    // ORCH_TEST_FAIL_WRITE fails every checked write to a path holding the text with ENOSPC,
    // as a full disk does.
    auto r = test::run_command("ORCH_TEST_FAIL_WRITE=" + name + " '" + ORCH_BINARY + "' --db " +
                               q(db) + " " + cmd + q(out));
    INFO(cmd << ": " << r.output);
    CHECK(r.exit_code == 4);
    CHECK_THAT(r.output, Contains("no space left on " + out.string()) && Contains("ENOSPC"));
    CHECK_FALSE(fs::exists(out));
    CHECK_FALSE(fs::exists(out.string() + ".tmp"));
  }
}

TEST_CASE("a new database on a full or read-only file system is exit 4, a bad path exit 2",
          "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "new.db";
  for (const std::string cmd : {"sweep", "run"}) {
    // The sweep's lock is the first file a new database's sweep creates beside it.
    auto r = test::run_command("ORCH_TEST_FAIL_WRITE=new.db '" + std::string(ORCH_BINARY) +
                               "' --db " + q(db) + " " + cmd + " " + q(tmp.path() / "tiny.yaml"));
    INFO(cmd << ": " << r.output);
    CHECK(r.exit_code == 4);
    CHECK_THAT(r.output, Contains("no space left on " + db.string() + ".tiny.lock"));
    CHECK_FALSE(fs::exists(db));
  }
  // A file where the database's folder should be is the user's path, not the machine's fault.
  write(tmp.path() / "taken", "x");
  auto bad = test::run_orch("--db " + q(tmp.path() / "taken" / "r.db") + " sweep " +
                            q(tmp.path() / "tiny.yaml"));
  INFO(bad.output);
  CHECK(bad.exit_code == 2);
}

TEST_CASE("run folders are never written through a planted link: DB.runs, the sweep's, a run's",
          "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "r.db", elsewhere = tmp.path() / "elsewhere";
  fs::create_directories(elsewhere);
  write(elsewhere / "result.json", "keep me");
  const std::string sweep = "--db " + q(db) + " sweep " + q(tmp.path() / "tiny.yaml");
  // <db>.runs itself, then the sweep's folder, as links: refused before anything runs.
  fs::create_directory_symlink(elsewhere, db.string() + ".runs");
  auto r = test::run_orch(sweep);
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains(db.string() + ".runs") && Contains("symbolic link"));
  CHECK_THAT(r.output, !Contains("[1/1]"));
  fs::remove(db.string() + ".runs");
  fs::create_directories(db.string() + ".runs");
  fs::create_directory_symlink(elsewhere, db.string() + ".runs/tiny");
  auto s = test::run_orch(sweep);
  INFO(s.output);
  CHECK(s.exit_code == 2);
  CHECK_THAT(s.output, Contains(db.string() + ".runs/tiny") && Contains("symbolic link"));
  fs::remove(db.string() + ".runs/tiny");
  // A run's own folder as a link: the run is not started through it, and the sweep stops.
  auto plan = test::run_orch("plan " + q(tmp.path() / "tiny.yaml"));
  std::smatch m;
  REQUIRE(std::regex_search(plan.output, m, std::regex(R"(\n0\s+\S+\s+([0-9a-f]{12}))")));
  fs::create_directories(db.string() + ".runs/tiny");
  const fs::path run_dir = db.string() + ".runs/tiny/" + m[1].str() + "-r0";
  fs::create_directory_symlink(elsewhere, run_dir);
  auto t = test::run_orch(sweep);
  INFO(t.output);
  CHECK(t.exit_code == 4);  // an environment fault: the sweep stops, a resume continues
  CHECK_THAT(t.output, Contains(run_dir.string()) && Contains("symbolic link"));
  CHECK(test::slurp(elsewhere / "result.json") == "keep me");
  CHECK_FALSE(fs::exists(elsewhere / "spec.json"));
}

TEST_CASE("plan --check with a TMPDIR that is not a folder says so plainly", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  write(tmp.path() / "file", "x");
  for (const auto& [dir, said] : std::vector<std::pair<fs::path, std::string>>{
           {tmp.path() / "missing", "No such file or directory"},
           {tmp.path() / "file", "Not a directory"}}) {
    auto r = test::run_command("TMPDIR=" + q(dir) + " '" + std::string(ORCH_BINARY) +
                               "' plan --check " + q(tmp.path() / "tiny.yaml"));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains("--check needs a temporary folder: TMPDIR=" + dir.string() +
                                  ": " + said + "; set TMPDIR to a folder you can write"));
    CHECK_THAT(r.output, !Contains("filesystem error"));
  }
}

TEST_CASE("a --plugin-path that is not a folder is an error, before anything runs", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "file", "x");
  fs::create_symlink("loop", tmp.path() / "loop");
  for (const auto& [p, said] : std::vector<std::pair<fs::path, std::string>>{
           {tmp.path() / "missing", "does not exist"},
           {tmp.path() / "file", "is not a folder"},
           {tmp.path() / "loop", "Too many levels of symbolic links"}}) {
    auto r = test::run_orch("--plugin-path " + q(p) + " plugins");
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains("--plugin-path") && Contains(p.string() + " ") && Contains(said));
  }
  auto ok = test::run_orch("--plugin-path " + q(tmp.path()) + " plugins");
  CHECK(ok.exit_code == 0);
}

TEST_CASE("standard output that cannot be written: exit 4 on a full device, 3 without a reader",
          "[cli]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  make_results(db);
  const std::string export_csv =
      "'" + std::string(ORCH_BINARY) + "' --db " + q(db) + " export --format csv";
  SECTION("a full device (/dev/full): the error and exit code 4, not 0 with half a table") {
    if (!fs::exists("/dev/full")) {
      WARN("no /dev/full here: nothing checked");
      return;
    }
    auto r = test::run_command("{ " + export_csv + " >/dev/full; }");
    INFO(r.output);
    CHECK(r.exit_code == 4);
    CHECK_THAT(r.output, Contains("no space left on standard output") && Contains("ENOSPC"));
  }
  SECTION("a pipe whose reader has gone: no message, exit code 3, never death by SIGPIPE") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    ::close(fds[0]);  // the reader is gone before orch writes a byte: every write is EPIPE
    const fs::path err = tmp.path() / "stderr.txt";
    const std::string cmd = export_csv + " 2>" + q(err);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    INFO(test::slurp(err));
    REQUIRE(WIFEXITED(status));  // not killed by SIGPIPE
    CHECK(WEXITSTATUS(status) == 3);
    CHECK(test::slurp(err).find("standard output") == std::string::npos);
  }
}

TEST_CASE("export -o: devices written in place, links refused, - is standard output", "[cli]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  make_results(db);
  const std::string orch = std::string("'") + ORCH_BINARY + "' --db " + q(db) + " ";
  if (fs::exists("/dev/null") && fs::exists("/dev/full")) {
    auto null = test::run_command(orch + "export --format csv -o /dev/null");
    INFO(null.output);
    CHECK(null.exit_code == 0);
    CHECK(fs::is_character_file("/dev/null"));
    auto full = test::run_command(orch + "export --format csv -o /dev/full");
    INFO(full.output);
    CHECK(full.exit_code == 4);
    CHECK_THAT(full.output, Contains("/dev/full") && Contains("ENOSPC"));
    CHECK(fs::is_character_file("/dev/full"));
  } else {
    WARN("no /dev/null or /dev/full here: the device cases were not checked");
  }
  // A link planted where the export goes: refused before anything is written, its target kept.
  const fs::path target = tmp.path() / "precious.txt";
  { std::ofstream(target) << "keep me"; }
  const fs::path link = tmp.path() / "runs.csv";
  fs::create_symlink(target, link);
  auto linked = test::run_command(orch + "export --format csv -o " + q(link));
  INFO(linked.output);
  CHECK(linked.exit_code == 2);
  CHECK_THAT(linked.output, Contains("symbolic link"));
  std::ifstream in(target);
  std::string kept;
  std::getline(in, kept);
  CHECK(kept == "keep me");
  auto report = test::run_command(orch + "report -o " + q(link));
  CHECK(report.exit_code == 2);
  // `-o -` is standard output.
  auto dash = test::run_command(orch + "export --format csv -o -");
  CHECK(dash.exit_code == 0);
  CHECK_THAT(dash.output, Contains("run_id,sweep,"));
  CHECK_FALSE(fs::exists("-"));
}
