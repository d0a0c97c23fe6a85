// The database's own faults from the third held-out probe of issue 39: a new database whose
// creation a full disk cut short leaves nothing behind, even with part of its schema written;
// a database on read-only media is exit 4 with its path and the reason for the commands that
// write it (ingest), and is read as it is by one that only reads it (submit without --wait).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "integration/test_support.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

using test::kTiny;
using test::q;
using test::write;

// A database with one sweep and one run, in WAL mode (a read-only open needs its -shm).
void make_results(const fs::path& db) {
  storage::Store store(db.string());
  const auto id = store.open_sweep("s", "exp", "exp.yaml");
  store.record(id, test::result_doc("fast", "a1b2c3d4e5f60718", 0, "ok", 1500));
}

// `command` run with `data` bind-mounted read-only at `ro`, in a mount namespace of its own;
// nullopt where this machine does not allow that.
std::optional<test::CommandResult> on_read_only(const fs::path& data, const fs::path& ro,
                                                const std::string& command) {
  fs::create_directories(ro);
  const std::string mount = "unshare -m sh -c \"mount --bind " + q(data) + " " + q(ro) +
                            " && mount -o remount,ro,bind " + q(ro) + " && ";
  if (test::run_command(mount + "echo mounted\"").output.find("mounted") == std::string::npos) {
    return std::nullopt;
  }
  return test::run_command(mount + command + "\"");
}

}  // namespace

TEST_CASE("a new database a full disk cut short midway is removed again, with its WAL",
          "[cli][root]") {
  if (::geteuid() != 0) {
    WARN("skipped without root: mounting a small tmpfs");
    return;
  }
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path full = tmp.path() / "full", db = full / "r.db";
  fs::create_directories(full);
  // Room for the database's first page and part of its WAL, not for the whole schema.
  REQUIRE(test::run_command("mount -t tmpfs -o size=200k tmpfs " + q(full)).exit_code == 0);
  auto r = test::run_orch("--db " + q(db) + " sweep " + q(tmp.path() / "tiny.yaml"));
  std::vector<std::string> left;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    if (fs::exists(db.string() + suffix)) left.push_back(db.string() + suffix);
  }
  test::run_command("umount " + q(full));
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("no space left on " + db.string()));
  CHECK(left.empty());
}

TEST_CASE("ingest into a database on read-only media is exit 4 with its path and reason", "[cli]") {
  test::TempDir tmp;
  const fs::path data = tmp.path() / "data", ro = tmp.path() / "ro", docs = tmp.path() / "docs";
  fs::create_directories(data);
  fs::create_directories(docs);
  make_results(data / "r.db");
  write(docs / "a.json", test::result_doc("other", "c3d4e5f607182930", 0).dump());
  const auto r = on_read_only(
      data, ro, "'" + std::string(ORCH_BINARY) + "' --db " + q(ro / "r.db") + " ingest " + q(docs));
  if (!r) {
    WARN("no read-only bind mount here; skipped");
    return;
  }
  INFO(r->output);
  CHECK(r->exit_code == 4);
  CHECK_THAT(r->output, Contains("cannot write the database " + (ro / "r.db").string()) &&
                            Contains("Read-only file system"));
  CHECK(r->output.find("statement failed") == std::string::npos);
}

TEST_CASE("submit without --wait reads a database on read-only media as it is", "[cli][slurm]") {
  test::TempDir tmp;
  const fs::path data = tmp.path() / "data", ro = tmp.path() / "ro", out = tmp.path() / "out";
  fs::create_directories(data);
  write(tmp.path() / "tiny.yaml", kTiny);
  make_results(data / "r.db");
  const auto r = on_read_only(data, ro,
                              "'" + std::string(ORCH_BINARY) + "' --db " + q(ro / "r.db") +
                                  " submit --slurm --dry-run --results " + q(out) + " " +
                                  q(tmp.path() / "tiny.yaml"));
  if (!r) {
    WARN("no read-only bind mount here; skipped");
    return;
  }
  INFO(r->output);
  CHECK(r->exit_code == 0);
  CHECK(fs::exists(out / "submit.sbatch"));
  CHECK(fs::exists(out / "index.json"));
}

TEST_CASE("an output that cannot be written names the path given, not a temporary name", "[cli]") {
  test::TempDir tmp;
  make_results(tmp.path() / "r.db");
  const fs::path out = tmp.path() / "nodir" / "x.csv";
  auto r = test::run_orch("--db " + q(tmp.path() / "r.db") + " export --format csv -o " + q(out));
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains(out.string()));
  CHECK(r.output.find(".tmp-") == std::string::npos);
}

TEST_CASE("an empty --db is refused as such, exit 2", "[cli]") {
  auto r = test::run_orch("--db '' sweeps");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--db") && Contains("path is empty"));
}
