// The third held-out probe of issue 39, as the orch binary meets it: files planted in the run
// folders and beside the database (links, FIFOs, devices, the database's own journal files)
// where orch writes or reads, outputs that are not orch's to replace, invisible characters in
// the HTML report, a full disk under `dataset make` and a new database, and paths given as
// --db that are not databases. Cases that need root (mounts) skip visibly without it.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "integration/test_support.h"
#include "plan/planner.h"
#include "plan/run_spec_json.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

using test::kTiny;
using test::q;
using test::write;

// A script workload whose program is never reached in these tests (its files are refused
// first); it ends without a report if it is.
constexpr const char* kScriptExperiment = R"(name: s
base:
  workload: {kind: script, command: "s.py", python: /usr/bin/python3}
  device: cpu
  telemetry: {enabled: false}
  batch_size: 4
  steps: {warmup: 1, measure: 2}
)";

using test::first_run_folder;

// An orch database with one sweep of one run.
void make_results(const fs::path& db) {
  storage::Store store(db.string());
  const auto id = store.open_sweep("s", "exp", "exp.yaml");
  store.record(id, test::result_doc("fast", "a1b2c3d4e5f60718", 0, "ok", 1500));
}

bool is_root() { return ::geteuid() == 0; }

}  // namespace

TEST_CASE("a script run never writes its specification through a link planted beside its result",
          "[cli][script]") {
  test::TempDir tmp;
  write(tmp.path() / "s.yaml", kScriptExperiment);
  write(tmp.path() / "s.py", "import sys\nsys.exit(0)\n");
  const fs::path victim = tmp.path() / "victim", db = tmp.path() / "r.db";
  write(victim, "keep me");
  const fs::path run_dir = db.string() + ".runs/s/" + first_run_folder(tmp.path() / "s.yaml");
  fs::create_directories(run_dir);
  const fs::path planted = run_dir / "result.json.script-spec.json";
  fs::create_symlink(victim, planted);

  auto r = test::run_orch("--db " + q(db) + " sweep " + q(tmp.path() / "s.yaml"));
  INFO(r.output);
  // The surroundings' fault, not the run's: the sweep stops, and runs it again once it is gone.
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains(planted.string()) && Contains("it is a symbolic link"));
  CHECK(test::slurp(victim) == "keep me");
  CHECK(fs::is_symlink(planted));
  const auto runs = test::runs_of(db, "s");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].status == "interrupted");

  // `orch exec --out X` writes X.script-spec.json beside X: the same refusal, naming it, made
  // before the run starts (exit 2, no result written), as for --out itself.
  const fs::path out = tmp.path() / "sout.json", beside = tmp.path() / "sout.json.script-spec.json";
  fs::create_symlink(victim, beside);
  REQUIRE(fs::exists(run_dir / "spec.json"));  // the sweep's specification of the run
  auto e = test::run_orch("exec --spec " + q(run_dir / "spec.json") + " --out " + q(out));
  INFO(e.output);
  CHECK(e.exit_code == 2);
  CHECK_THAT(e.output, Contains(beside.string()) && Contains("it is a symbolic link"));
  CHECK(test::slurp(victim) == "keep me");
  CHECK_FALSE(fs::exists(out));
  // A FIFO there is named too, never opened (a write to it would wait for a reader).
  fs::remove(beside);
  REQUIRE(::mkfifo(beside.c_str(), 0600) == 0);
  auto f = test::run_orch("exec --spec " + q(run_dir / "spec.json") + " --out " + q(out));
  INFO(f.output);
  CHECK(f.exit_code == 2);
  CHECK_THAT(f.output, Contains(beside.string()) && Contains("it is a FIFO"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("exec --out replaces only an earlier result document, and checks before it runs",
          "[cli]") {
  test::TempDir tmp;
  const fs::path spec = tmp.path() / "spec.json", db = tmp.path() / "r.db";
  write(spec,
        run_spec_json(make_plan_from_string(kTiny, "tiny.yaml", test::built_plugins()).runs.at(0))
            .dump());
  make_results(db);
  const fs::path yaml = tmp.path() / "e.yaml", text = tmp.path() / "notes.txt",
                 other = tmp.path() / "other.db", link = tmp.path() / "link.json";
  write(yaml, kTiny);
  write(text, "my notes\n");
  {
    storage::Database d(other.string());
    d.exec("CREATE TABLE t (x)");
  }
  fs::create_symlink(text, link);
  const std::string db_before = test::slurp(db), other_before = test::slurp(other);
  const std::string exec = "--db " + q(db) + " exec --spec " + q(spec) + " --out ";
  struct Case {
    fs::path out;
    std::string why;
  };
  for (const auto& c : std::vector<Case>{
           {db, "it is the results database"},
           {yaml, "is not an earlier result document of orch"},
           {text, "is not an earlier result document of orch"},
           {other, "it is an SQLite database"},
           {link, "it is a symbolic link"},
       }) {
    // The run itself, not --write-outcome: refused before it starts, so nothing ran.
    auto r = test::run_orch(exec + q(c.out));
    INFO(c.out << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains(c.out.string()) && Contains(c.why));
    CHECK(r.output.find("(repeat 0)") == std::string::npos);
  }
  CHECK(test::slurp(db) == db_before);
  CHECK(test::slurp(other) == other_before);
  CHECK(test::slurp(yaml) == kTiny);
  CHECK(test::slurp(text) == "my notes\n");
  CHECK(fs::is_symlink(link));

  // A new file, and then that earlier result document of orch, are written.
  const fs::path out = tmp.path() / "result.json";
  for (int i = 0; i < 2; ++i) {
    auto r = test::run_orch(exec + q(out) + " --write-outcome failed --reason 'again'");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(nlohmann::json::parse(test::slurp(out))["status"] == "failed");
  }
}

TEST_CASE("export -o, report -o and exec --out never write the database's journal files", "[cli]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  make_results(db);
  // A live database in WAL mode: this connection keeps its -wal and -shm files there.
  storage::Store live(db.string());
  REQUIRE(live.find_sweep("s").has_value());
  write(db.string() + "-journal", "");  // an empty journal, as SQLite leaves one
  const std::string dbarg = "--db " + q(db) + " ";
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    const fs::path target = db.string() + suffix;
    REQUIRE(fs::exists(target));
    const auto size_before = fs::file_size(target);
    for (const std::string cmd :
         {"export --format csv -o ", "export --format json -o ", "report -o "}) {
      auto r = test::run_orch(dbarg + cmd + q(target));
      INFO(cmd << target << ": " << r.output);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.output, Contains(std::string("it is the results database's ") + suffix));
    }
    CHECK(fs::file_size(target) == size_before);
  }
  // Another SQLite database's companions, by their name, whether they exist or not.
  const fs::path other = tmp.path() / "other.db";
  {
    storage::Database d(other.string());
    d.exec("CREATE TABLE t (x)");
  }
  write(other.string() + "-wal", "");
  for (const fs::path& target :
       {fs::path(other.string() + "-wal"), fs::path(other.string() + "-journal")}) {
    auto r = test::run_orch(dbarg + "export --format csv -o " + q(target));
    INFO(target << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains("of the SQLite database " + other.string()));
  }
  CHECK(fs::file_size(other.string() + "-wal") == 0);
  CHECK_FALSE(fs::exists(other.string() + "-journal"));
}

TEST_CASE("the HTML report shows bidirectional and C1 control characters, never applies them",
          "[cli][report]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  // U+202E (right-to-left override), U+2066 (left-to-right isolate), U+200F (right-to-left
  // mark), U+061C (arabic letter mark) and C1's U+009B (CSI).
  const std::string name = "s\u202eX\xc2\x9b", tail = "warn \u2066evil\u2069 \u061c\n";
  {
    storage::Store store(db.string());
    const auto id = store.open_sweep(name, "exp\u200f", "exp.yaml");
    store.record(id, test::result_doc("fast", "a1b2c3d4e5f60718", 0, "ok", 1500));
    auto failed = test::result_doc("bad", "b2c3d4e5f6071829", 0, "failed");
    failed["error"] = "boom \u202d";
    failed["outcome"]["stderr_tail"] = tail;
    store.record(id, failed);
  }
  const fs::path html = tmp.path() / "r.html";
  auto r = test::run_orch("--db " + q(db) + " report -o " + q(html));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string page = test::slurp(html);
  for (const char* raw : {"\u202e", "\u2066", "\u2069", "\u200f", "\u061c", "\u202d", "\xc2\x9b"})
    CHECK(page.find(raw) == std::string::npos);
  CHECK_THAT(page, Contains("<title>orch report: s\\u202eX\\u009b"));
  CHECK_THAT(page, Contains("warn \\u2066evil\\u2069 \\u061c"));
  CHECK_THAT(page, Contains("boom \\u202d"));
}

TEST_CASE("dataset make on a full disk leaves nothing, so the same command runs again",
          "[cli][root]") {
  if (!is_root()) {
    WARN("skipped without root: mounting a small tmpfs");
    return;
  }
  test::TempDir tmp;
  const fs::path mnt = tmp.path() / "mnt", dir = mnt / "data" / "set";
  fs::create_directories(mnt);
  REQUIRE(test::run_command("mount -t tmpfs -o size=256k tmpfs " + q(mnt)).exit_code == 0);
  const std::string make = "dataset make " + q(dir) + " --classes 2 --per-class 8 --workers 2";
  auto r = test::run_orch(make);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(mnt)) left.push_back(e.path().filename().string());
  // The fix: a file system with room; then the same command again.
  test::run_command("mount -o remount,size=64m " + q(mnt));
  auto again = test::run_orch(make);
  test::run_command("umount " + q(mnt));
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains("No space left on device"));
  CHECK(left.empty());  // neither a partial image nor the folders it made
  INFO(again.output);
  CHECK(again.exit_code == 0);
}

TEST_CASE("a --db ending in / or naming a folder is refused before any folder is made", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path x = tmp.path() / "x.db";
  auto r = test::run_orch("--db " + q(x.string() + "/") + " sweep " + q(tmp.path() / "tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains(x.string() + "/") && Contains("names a folder"));
  CHECK_FALSE(fs::exists(x));
  // A folder that is there is said to be a folder, and nothing else.
  fs::create_directories(x);
  auto f = test::run_orch("--db " + q(x) + " sweep " + q(tmp.path() / "tiny.yaml"));
  INFO(f.output);
  CHECK(f.exit_code == 2);
  CHECK_THAT(f.output, Contains(x.string() + ": it is a folder"));
  CHECK(f.output.find("FIFO") == std::string::npos);
  CHECK(fs::is_empty(x));
}

TEST_CASE("a --db that is no SQLite file is named as not an orch results database", "[cli]") {
  test::TempDir tmp;
  const fs::path yaml = tmp.path() / "tiny.yaml";
  write(yaml, kTiny);
  for (const std::string& cmd : {"sweep " + q(yaml), std::string("rank"), std::string("sweeps")}) {
    auto r = test::run_orch("--db " + q(yaml) + " " + cmd);
    INFO(cmd << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains(yaml.string() + " is not an orch results database") &&
                             Contains("not an SQLite database"));
    CHECK(r.output.find("statement failed") == std::string::npos);
  }
  CHECK(test::slurp(yaml) == kTiny);
}

TEST_CASE("ingest names a *.json that is a FIFO or a device, and reads neither", "[cli]") {
  test::TempDir tmp;
  const fs::path docs = tmp.path() / "docs";
  fs::create_directories(docs);
  REQUIRE(::mkfifo((docs / "a.json").c_str(), 0600) == 0);  // would block a plain open
  fs::create_symlink("/dev/zero", docs / "b.json");         // would never end
  write(docs / "c.json", test::result_doc("fast", "a1b2c3d4e5f60718", 0).dump());
  auto r = test::run_orch("--db " + q(tmp.path() / "i.db") + " ingest " + q(docs));
  INFO(r.output);
  CHECK(r.exit_code == 1);  // as for a malformed document: the others are loaded
  CHECK_THAT(r.output, Contains((docs / "a.json").string() + ": it is a FIFO (named pipe)"));
  CHECK_THAT(r.output, Contains((docs / "b.json").string() + ": it is a character device"));
  CHECK_THAT(r.output, Contains("1 recorded") && Contains("2 malformed"));
}

TEST_CASE("a new database on a full disk is removed again, exit 4", "[cli][root]") {
  if (!is_root()) {
    WARN("skipped without root: mounting a small tmpfs");
    return;
  }
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path full = tmp.path() / "full", db = full / "new.db";
  fs::create_directories(full);
  REQUIRE(test::run_command("mount -t tmpfs -o size=64k tmpfs " + q(full)).exit_code == 0);
  test::run_command("dd if=/dev/zero of=" + q(full / "filler") + " bs=4k");  // until it is full
  auto r = test::run_orch("--db " + q(db) + " sweep " + q(tmp.path() / "tiny.yaml"));
  const bool left = fs::exists(db);
  test::run_command("umount " + q(full));
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK_FALSE(left);
}

TEST_CASE("DB.runs as a link is refused before the database is created", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "s.db", elsewhere = tmp.path() / "elsewhere";
  fs::create_directories(elsewhere);
  fs::create_directory_symlink(elsewhere, db.string() + ".runs");
  auto r = test::run_orch("--db " + q(db) + " sweep " + q(tmp.path() / "tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains(db.string() + ".runs") && Contains("symbolic link"));
  CHECK_FALSE(fs::exists(db));
  CHECK(fs::is_empty(elsewhere));
}

TEST_CASE("a run folder's refusal gives no -o hint: no option names those files", "[cli]") {
  test::TempDir tmp;
  write(tmp.path() / "tiny.yaml", kTiny);
  const fs::path db = tmp.path() / "r.db", victim = tmp.path() / "victim";
  write(victim, "keep me");
  const fs::path run_dir = db.string() + ".runs/tiny/" + first_run_folder(tmp.path() / "tiny.yaml");
  fs::create_directories(run_dir);
  fs::create_symlink(victim, run_dir / "spec.json");
  auto r = test::run_orch("--db " + q(db) + " sweep " + q(tmp.path() / "tiny.yaml"));
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Contains((run_dir / "spec.json").string()) && Contains("symbolic link"));
  CHECK(r.output.find("leave -o out") == std::string::npos);
  CHECK(test::slurp(victim) == "keep me");
}
