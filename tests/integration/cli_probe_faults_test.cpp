// The second held-out probe of issue 39, as the orch binary meets it: option values that are
// not numbers of the allowed range, outputs and databases next to planted links and special
// files, a process limit, a full TMPDIR, control characters in names, nohup. Cases that need
// root (mknod, another user, mounts) skip visibly without it.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "integration/test_support.h"
#include "storage/store.h"

using namespace orch;
using Catch::Matchers::Contains;
using test::kTiny;
using test::q;
using test::write;

namespace fs = std::filesystem;

TEST_CASE("floating-point options refuse NaN and infinities, saying what is allowed", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const std::string tiny = q(tmp.path() / "tiny.yaml");
  const fs::path db = tmp.path() / "r.db";
  struct Case {
    std::string args, option, allowed;
  };
  const std::vector<Case> cases = {
      {"sweep " + tiny + " --grace nan", "--grace: 'nan' is not a finite number", "0 or more"},
      {"sweep " + tiny + " --grace inf", "--grace: 'inf' is not a finite number", "0 or more"},
      {"sweep " + tiny + " --batch-headroom nan", "--batch-headroom: 'nan' is not a finite",
       "from 0.05 to 1"},
      {"sweep " + tiny + " --poll nan", "--poll: 'nan' is not a finite number", "greater than 0"},
      {"sweep " + tiny + " --max-runs -1", "--max-runs: '-1' is out of range", "0 or more"},
      {"plan " + tiny + " --max-runs -1", "--max-runs: '-1' is out of range", "0 or more"},
      {"submit " + tiny + " --signal-seconds -inf", "--signal-seconds: '-inf' is not a finite",
       "greater than 0"},
      {"exec --spec " + tiny + " --out y --supervise --grace nan", "--grace: 'nan' is not a finite",
       "0 or more"},
  };
  for (const auto& c : cases) {
    auto r = test::run_orch(c.args + " --db " + q(db));
    INFO(c.args << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains(c.option) && Contains("give a number " + c.allowed));
    CHECK(r.output.size() < 400);  // no 300-digit bound
    CHECK_FALSE(fs::exists(db));
  }
}

TEST_CASE("an empty --until is an error, not 'no deadline'", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "r.db";
  auto r = test::run_orch("sweep " + q(tmp.path() / "tiny.yaml") + " --until '' --db " + q(db));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--until: '' is not a time of day (expected HH:MM"));
  CHECK_FALSE(fs::exists(db));
}

TEST_CASE("export -o a block device is bad input naming it, and nothing is written",
          "[cli][root]") {
  if (::geteuid() != 0) {
    WARN("skipped without root: mknod of a block device");
    return;
  }
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  {
    storage::Store store(db.string());
    store.open_sweep("s", "exp", "exp.yaml");
  }
  // A block device of a major number no driver has (240: local use): opening it could only
  // fail, so a regression writes no disk.
  const fs::path disk = tmp.path() / "disk";
  REQUIRE(::mknod(disk.c_str(), S_IFBLK | 0600, makedev(240, 0)) == 0);
  for (const char* format : {"csv", "json"}) {
    auto r = test::run_orch(std::string("export --format ") + format + " -o " + q(disk) + " --db " +
                            q(db));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains(disk.string()) && Contains("it is a block device"));
    struct stat st {};
    REQUIRE(::lstat(disk.c_str(), &st) == 0);
    CHECK(S_ISBLK(st.st_mode));  // not replaced by a file
  }
  auto r = test::run_orch("report -o " + q(disk) + " --db " + q(db));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("it is a block device"));
}

TEST_CASE("a link or special file at DB-wal or DB-journal is named, not 'unable to open'",
          "[cli]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  {
    storage::Store store(db.string());
    store.open_sweep("s", "exp", "exp.yaml");
  }
  const fs::path target = tmp.path() / "elsewhere";
  for (const char* suffix : {"-wal", "-journal", "-shm"}) {
    const fs::path planted = db.string() + suffix;
    fs::create_symlink(target, planted);
    for (const char* command : {"sweeps", "rank"}) {
      auto r = test::run_orch(std::string(command) + " --db " + q(db));
      INFO(command << suffix << "\n" << r.output);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.output, Contains(planted.string() + " is a symbolic link") &&
                               Contains("does not open the database's journal through links"));
      CHECK_FALSE(fs::exists(target));
    }
    fs::remove(planted);
  }
  REQUIRE(::mkfifo((db.string() + "-wal").c_str(), 0600) == 0);
  auto r = test::run_orch("sweeps --db " + q(db));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains(db.string() + "-wal is not a regular file"));
}

TEST_CASE("the cached loader's path at a device or folder says what is there", "[cli]") {
  test::TempDir tmp;
  const auto plan_with = [&](const std::string& path) {
    write(tmp.path() / "c.yaml",
          std::string(kTiny) + "matrix:\n  data: [{plugin: cached, path: " + path + "}]\n");
    return test::run_orch("plan " + q(tmp.path() / "c.yaml"));
  };
  auto dev = plan_with("/dev/zero");
  INFO(dev.output);
  CHECK(dev.exit_code == 2);
  CHECK_THAT(dev.output, Contains("/dev/zero: is not a regular file (a character device)"));
  CHECK(dev.output.find("no such file") == std::string::npos);
  auto dir = plan_with(tmp.path().string());
  INFO(dir.output);
  CHECK(dir.exit_code == 2);
  CHECK_THAT(dir.output, Contains(tmp.path().string() + ": is a folder, not a cache file"));
  auto missing = plan_with((tmp.path() / "none.cache").string());
  CHECK_THAT(missing.output, Contains("none.cache: no such file"));
}

TEST_CASE("dataset make refuses a symbolic link at DIR/train and writes nothing through it",
          "[cli]") {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "data", elsewhere = tmp.path() / "elsewhere";
  fs::create_directories(dir);
  fs::create_directories(elsewhere);
  fs::create_directory_symlink(elsewhere, dir / "train");
  auto r = test::run_orch("dataset make " + q(dir) + " --classes 2 --per-class 1");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains((dir / "train").string() + ": is a symbolic link") &&
                           Contains("does not write through links"));
  CHECK(fs::is_empty(elsewhere));
}

TEST_CASE("dataset cache onto a read-only mount is an environment fault, exit 4", "[cli][root]") {
  if (::geteuid() != 0) {
    WARN("skipped without root: mounting a read-only file system");
    return;
  }
  test::TempDir tmp;
  const fs::path src = tmp.path() / "src", ro = tmp.path() / "ro";
  auto made = test::run_orch("dataset make " + q(src) + " --classes 1 --per-class 2");
  REQUIRE(made.exit_code == 0);
  fs::create_directories(ro);
  REQUIRE(test::run_command("mount -t tmpfs -o ro,size=1m tmpfs " + q(ro)).exit_code == 0);
  auto r = test::run_orch("dataset cache " + q(src) + " " + q(ro / "x.cache") + " --size 8");
  test::run_command("umount " + q(ro));
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("x.cache.partial: cannot create: Read-only file system"));
}

TEST_CASE("an ORCH_PLUGIN_PATH entry that is missing or no folder is an error naming it", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  write(tmp.path() / "a-file", "x");
  const std::string missing = (tmp.path() / "nonexistent").string();
  auto r = test::run_command("ORCH_PLUGIN_PATH=" + q(missing) + " '" + ORCH_BINARY + "' plan " +
                             q(tmp.path() / "tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("ORCH_PLUGIN_PATH: " + missing + " does not exist"));
  auto f = test::run_command("ORCH_PLUGIN_PATH=" + q(tmp.path() / "a-file") + " '" + ORCH_BINARY +
                             "' plan " + q(tmp.path() / "tiny.yaml"));
  INFO(f.output);
  CHECK(f.exit_code == 2);
  CHECK_THAT(f.output, Contains("a-file is not a folder"));
  // An empty entry (a leading or doubled colon) is nothing, as on PATH.
  auto ok = test::run_command("ORCH_PLUGIN_PATH=: '" + std::string(ORCH_BINARY) + "' plan " +
                              q(tmp.path() / "tiny.yaml"));
  CHECK(ok.exit_code == 0);
}

namespace {

// A command line that runs `orch ARGS` as the user nobody with a process limit of `nproc`
// (root is exempt from RLIMIT_NPROC), still able to read orch's libraries wherever they are.
// Empty when this test cannot do that (not root, no setpriv or prlimit).
std::string as_nobody_limited(int nproc, const std::string& args) {
  if (::geteuid() != 0 || test::run_command("command -v setpriv && command -v prlimit").exit_code)
    return {};
  return "setpriv --reuid 65534 --regid 65534 --clear-groups "
         "--inh-caps +dac_read_search,+dac_override --ambient-caps +dac_read_search,+dac_override "
         "-- prlimit --nproc=" +
         std::to_string(nproc) + " '" + ORCH_BINARY + "' " + args;
}

}  // namespace

TEST_CASE("plan --check when no child process can be started says why, exit 4", "[cli][root]") {
  test::TempDir tmp;
  fs::permissions(tmp.path(), fs::perms::all);
  write(tmp.path() / "tiny.yaml", kTiny);
  // No probe cache: every plugin library is vetted in a child, which cannot be started.
  const std::string cmd = as_nobody_limited(1, "plan --check " + q(tmp.path() / "tiny.yaml"));
  if (cmd.empty()) {
    WARN("skipped: needs root, setpriv and prlimit to run orch under a process limit");
    return;
  }
  auto r = test::run_command("ORCH_PLUGIN_PROBE_CACHE= " + cmd);
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("could not be vetted in a child process (fork: Resource "
                                "temporarily unavailable") &&
                           Contains("ulimit -u"));
  CHECK(r.output.find("plugin named") == std::string::npos);
}

TEST_CASE("a run that cannot start a thread or process is the environment's failure, exit 4",
          "[cli][root]") {
  test::TempDir tmp;
  fs::permissions(tmp.path(), fs::perms::all);
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "r.db", cache = tmp.path() / "probes.tsv";
  const std::string env =
      "ORCH_PLUGIN_PROBE_CACHE=" + q(cache) + " ORCH_LOCK_DIR=" + q(tmp.path() / "locks") + " ";
  // The plugins vetted first, without the limit, so the sweep itself gets going.
  const std::string warm = as_nobody_limited(4096, "plan " + q(tmp.path() / "tiny.yaml"));
  if (warm.empty()) {
    WARN("skipped: needs root, setpriv and prlimit to run orch under a process limit");
    return;
  }
  REQUIRE(test::run_command(env + warm).exit_code == 0);
  auto r = test::run_command(
      env + as_nobody_limited(2, "sweep " + q(tmp.path() / "tiny.yaml") + " --db " + q(db)));
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("sweep: environment fault: Resource temporarily unavailable") &&
                           Contains("ulimit -u"));
  // Not the configuration's failure: the run is left to run again once the limit is raised.
  const auto runs = test::runs_of(db, "tiny");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "interrupted");
}

TEST_CASE("plan --check with a full TMPDIR says so plainly and leaves no orch-check folder",
          "[cli][root]") {
  if (::geteuid() != 0) {
    WARN("skipped without root: mounting a small tmpfs as TMPDIR");
    return;
  }
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path full = tmp.path() / "full";
  fs::create_directories(full);
  REQUIRE(test::run_command("mount -t tmpfs -o size=64k tmpfs " + q(full)).exit_code == 0);
  test::run_command("dd if=/dev/zero of=" + q(full / "filler") + " bs=4k");  // until it is full
  auto r = test::run_command("TMPDIR=" + q(full) + " ORCH_LOCK_DIR=" + q(tmp.path() / "locks") +
                             " '" + ORCH_BINARY + "' plan --check " + q(tmp.path() / "tiny.yaml"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(full)) {
    if (e.path().filename() != "filler") left.push_back(e.path().filename().string());
  }
  test::run_command("umount " + q(full));
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("the temporary folder " + full.string() + " (TMPDIR) is full"));
  CHECK(left.empty());
}

TEST_CASE("control characters in names and values are escaped in every message", "[cli]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  {
    storage::Store store(db.string());
    store.open_sweep("s", "exp", "exp.yaml");
  }
  const auto raw = [](const std::string& out) {
    return out.find('\x1b') != std::string::npos || out.find("\u202e") != std::string::npos;
  };
  // A sweep name given on the command line: "no sweep named ...".
  auto missing = test::run_orch("rank --sweep '\x1b[2J\u202eX' --db " + q(db));
  INFO(missing.output);
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Contains("no sweep named '\\x1b[2J\\u202eX'"));
  CHECK_FALSE(raw(missing.output));
  // A value refused by validation, quoted as got '...'.
  write(tmp.path() / "bad.yaml",
        std::string(kTiny) + "matrix:\n  precision: [\"\\e]0;pwned\\a\\u202e\"]\n");
  auto invalid = test::run_orch("plan " + q(tmp.path() / "bad.yaml"));
  INFO(invalid.output);
  CHECK(invalid.exit_code == 2);
  CHECK_THAT(invalid.output, Contains("\\x1b]0;pwned\\x07\\u202e"));
  CHECK_FALSE(raw(invalid.output));
  // A file name in a message.
  const fs::path odd = tmp.path() / "a\x1b[31m\u202eb.yaml";
  auto file = test::run_orch("plan " + q(odd));
  INFO(file.output);
  CHECK(file.exit_code == 2);
  CHECK_THAT(file.output, Contains("a\\x1b[31m\\u202eb.yaml"));
  CHECK_FALSE(raw(file.output));
  // An option value CLI11 quotes.
  auto option = test::run_orch("sweep x.yaml --order '\x1b[2J' --db " + q(db));
  INFO(option.output);
  CHECK(option.exit_code == 2);
  CHECK_FALSE(raw(option.output));
}

TEST_CASE("the sweep's closing summary escapes the sweep's name", "[cli]") {
  test::TempDir tmp;
  std::string yaml = kTiny;
  yaml.replace(0, yaml.find('\n'), "name: \"tiny\\e[2J\\u202e\"");
  write(tmp.path() / "tiny.yaml", yaml);
  auto r =
      test::run_orch("sweep " + q(tmp.path() / "tiny.yaml") + " --db " + q(tmp.path() / "r.db"));
  INFO(r.output);
  if (r.output.find("is not a valid sweep name") != std::string::npos ||
      r.output.find("name:") != std::string::npos) {
    // Refused as a name: nothing raw was shown either.
    CHECK(r.exit_code == 2);
  } else {
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Contains("sweep tiny\\x1b[2J\\u202e: 1 runs"));
  }
  CHECK(r.output.find('\x1b') == std::string::npos);
  CHECK(r.output.find("\u202e") == std::string::npos);
}
