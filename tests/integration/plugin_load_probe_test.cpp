// Libraries that are files but not what they seem: load-time code that crashes, exits or hangs
// (vetted in a child process, the verdict remembered per file), and symbolic link loops in a
// plugin folder; through the registry and through the orch binary.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>

#include "integration/test_support.h"
#include "plugin_host/load_probe.h"
#include "plugin_host/probe_cache.h"

using namespace orch;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const fs::path kFaults = fs::path(ORCH_TEST_PLUGIN_DIR) / "load-faults";
const fs::path kBuilt = fs::path(ORCH_PLUGIN_BUILD_DIR);

using test::q;

PluginRegistry probing_registry(const fs::path& cache = {},
                                std::chrono::milliseconds timeout = 30s) {
  PluginRegistry reg;
  reg.set_load_probe({true, timeout, cache});
  return reg;
}

// Copies `from` to `to` through a temporary file renamed into place, as installers do (a
// library rewritten in place would change under a process that has it mapped).
void install(const fs::path& from, const fs::path& to) {
  const fs::path tmp = to.string() + ".new";
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
  fs::rename(tmp, to);
}

// The lines of a probe cache file that name `path`.
std::vector<std::string> cache_lines(const fs::path& cache, const fs::path& path) {
  std::vector<std::string> out;
  std::istringstream in(test::slurp(cache));
  for (std::string line; std::getline(in, line);) {
    if (line.find("\t" + path.string()) != std::string::npos) out.push_back(line);
  }
  return out;
}

// A plugin folder holding libraries whose load-time code segfaults, exits and hangs, symbolic
// link loops named like libraries, a good out-of-tree plugin (`fault`) and a library that is
// no plugin; and a folder link that points to itself.
struct BadFolder {
  test::TempDir tmp;
  fs::path dir = tmp.path() / "plugins";
  fs::path loop_dir = tmp.path() / "looped";
  fs::path cache = tmp.path() / "probes.tsv";
  BadFolder() {
    fs::create_directories(dir);
    for (const char* f : {"libload_segfault.so", "libload_exit.so", "libload_hang.so"}) {
      fs::create_symlink(kFaults / f, dir / f);
    }
    fs::create_symlink(fs::path(ORCH_FAULT_PLUGIN_DIR) / "libfault.so", dir / "libfault.so");
    fs::copy_file(fs::path(ORCH_TEST_PLUGIN_DIR) / "libnot_orch.so", dir / "libnot_orch.so");
    fs::create_symlink("libloop.so", dir / "libloop.so");
    fs::create_symlink("libcycle_b.so", dir / "libcycle_a.so");
    fs::create_symlink("libcycle_a.so", dir / "libcycle_b.so");
    fs::create_symlink("looped", loop_dir);
  }
  // The environment and binary for one command, with this folder's cache and a short timeout.
  // The looped folder comes through ORCH_PLUGIN_PATH, a search path whose bad entries are
  // reported and skipped (a --plugin-path that is not a folder is an error of its own).
  std::string orch(const std::string& args, const std::string& env = {}) const {
    return "ORCH_PLUGIN_PROBE_CACHE=" + q(cache) + " ORCH_PLUGIN_PROBE_TIMEOUT=1 " +
           "ORCH_PLUGIN_PATH=" + q(loop_dir) + " " + env + " " + q(ORCH_BINARY) +
           " --plugin-path " + q(dir) + " " + args;
  }
};

using test::kTiny;

}  // namespace

TEST_CASE("a library whose load-time code segfaults is refused with its signal", "[plugins]") {
  auto reg = probing_registry();
  const auto path = kFaults / "libload_segfault.so";
  CHECK_FALSE(reg.load_file(path));  // and this process is still here
  REQUIRE(reg.refused().size() == 1);
  const std::string why = reg.refused()[0].reason;
  CHECK_THAT(why, Contains("plugin library " + path.string() +
                           " refused: its load-time code was killed by signal 11 (SIGSEGV)"));
  CHECK_THAT(why, Contains("its last line on stderr: \"load_segfault: dereferencing a null"));
  CHECK(reg.probes_run() == 1);
  CHECK(reg.plugins().empty());
}

TEST_CASE("a library whose load-time code calls exit(0) is refused, not taken as loaded",
          "[plugins]") {
  auto reg = probing_registry();
  const auto path = kFaults / "libload_exit.so";
  CHECK_FALSE(reg.load_file(path));
  REQUIRE(reg.refused().size() == 1);
  CHECK_THAT(reg.refused()[0].reason,
             Contains("plugin library " + path.string() +
                      " refused: its load-time code called exit(0) while loading"));
}

TEST_CASE("a library whose load-time code hangs is refused after the probe's timeout",
          "[plugins]") {
  test::TempDir tmp;
  const auto cache = tmp.path() / "probes.tsv";
  const auto path = kFaults / "libload_hang.so";
  const auto start = std::chrono::steady_clock::now();
  auto reg = probing_registry(cache, 500ms);
  CHECK_FALSE(reg.load_file(path));
  CHECK(std::chrono::steady_clock::now() - start < 20s);
  REQUIRE(reg.refused().size() == 1);
  CHECK_THAT(reg.refused()[0].reason,
             Contains(path.string() +
                      " refused: its load-time code did not finish within 0.5 s and was killed"));
  // Remembered, as a crash is: every later command (each run's child in a sweep) would
  // otherwise wait the whole timeout again. The reason says how to have it probed again.
  CHECK(cache_lines(cache, path).size() == 1);
  CHECK_THAT(reg.refused()[0].reason, Contains("remembered until the library changes"));
  const auto again_start = std::chrono::steady_clock::now();
  auto again = probing_registry(cache, 500ms);
  CHECK_FALSE(again.load_file(path));
  CHECK(again.probes_run() == 0);
  CHECK(std::chrono::steady_clock::now() - again_start < 400ms);
  REQUIRE(again.refused().size() == 1);
  CHECK_THAT(again.refused()[0].reason, Contains("did not finish within 0.5 s"));
}

TEST_CASE("a library that cannot be vetted because fork fails is not loaded, and not remembered",
          "[plugins]") {
  // In a child of the test: as root, first become nobody (root is exempt from RLIMIT_NPROC);
  // then a process limit of 0 makes the probe's fork fail with EAGAIN, as a full pids cgroup or
  // `ulimit -u` would. The verdict comes back through a pipe.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    const rlimit none{0, 0};
    if (::setrlimit(RLIMIT_NPROC, &none) != 0) ::_exit(4);
    const auto v = probe_load_in_child(kFaults / "libload_exit.so", 2s);
    const std::string out = std::string(v.safe ? "1" : "0") + (v.cacheable ? "1" : "0") + v.reason;
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  INFO(got);
  REQUIRE(got.size() > 2);
  CHECK(got.substr(0, 2) == "00");  // not safe, not cacheable
  CHECK_THAT(got, Contains("could not be vetted in a child process (fork: "));
  CHECK_THAT(got, Contains("a process limit such as ulimit -u"));
  CHECK_THAT(got, Contains("so it is not loaded"));
}

TEST_CASE("good plugins load after a refused one, and the built ones pass the probe", "[plugins]") {
  auto reg = probing_registry();
  reg.load_file(kFaults / "libload_segfault.so");
  REQUIRE(reg.load_file(kBuilt / "liborch_precision_fp32.so"));
  REQUIRE(reg.load_file(kBuilt / "liborch_model_resnet.so"));
  CHECK(reg.names(PluginKind::kPrecision) == std::vector<std::string>{"fp32"});
  CHECK(reg.names(PluginKind::kModel) == std::vector<std::string>{"resnet"});
  CHECK(reg.probes_run() == 3);
  CHECK(reg.refused().size() == 1);
}

TEST_CASE("the probe's verdict is remembered for an unchanged file and not for a changed one",
          "[plugins]") {
  test::TempDir tmp;
  const auto cache = tmp.path() / "probes.tsv";
  const auto good = tmp.path() / "libgood.so";
  const auto bad = tmp.path() / "libbad.so";
  install(kBuilt / "liborch_stream_default.so", good);
  install(kFaults / "libload_segfault.so", bad);
  {
    auto first = probing_registry(cache);
    CHECK(first.load_file(good));
    CHECK_FALSE(first.load_file(bad));
    CHECK(first.probes_run() == 2);
  }
  const auto good_lines = cache_lines(cache, good);
  REQUIRE(good_lines.size() == 1);
  CHECK(good_lines[0].rfind("safe\t" + std::to_string(fs::file_size(good)) + "\t", 0) == 0);
  const auto bad_lines = cache_lines(cache, bad);
  REQUIRE(bad_lines.size() == 1);
  CHECK_THAT(bad_lines[0], Contains("refused\t"));
  CHECK_THAT(bad_lines[0], Contains("killed by signal 11 (SIGSEGV)"));

  {
    auto second = probing_registry(cache);
    CHECK(second.load_file(good));
    CHECK_FALSE(second.load_file(bad));
    CHECK(second.probes_run() == 0);  // both answered from the cache
    REQUIRE(second.refused().size() == 1);
    CHECK_THAT(second.refused()[0].reason, Contains("plugin library " + bad.string() +
                                                    " refused: its load-time code was "
                                                    "killed by signal 11 (SIGSEGV)"));
  }

  // Another library installed under the same name, and the same file with a new time: both
  // are new files to the probe.
  install(kBuilt / "liborch_precision_fp32.so", good);
  fs::last_write_time(bad, fs::last_write_time(bad) + 2s);
  {
    auto third = probing_registry(cache);
    CHECK(third.load_file(good));
    CHECK_FALSE(third.load_file(bad));
    CHECK(third.probes_run() == 2);
  }
  REQUIRE(cache_lines(cache, good).size() == 1);
  CHECK(cache_lines(cache, good) != good_lines);
}

TEST_CASE("a foreign probe cache counts as empty and is left as it is", "[plugins]") {
  // ORCH_PLUGIN_PROBE_CACHE pointed at someone else's file (a results database, an experiment,
  // notes): its lines are not trusted, and it is never replaced by orch's list.
  test::TempDir tmp;
  const auto cache = tmp.path() / "probes.tsv";
  std::ostringstream text;
  text << "# some other program's file\nsafe\t1\t2\t3\t4\t"
       << (kFaults / "libload_segfault.so").string() << "\n";
  std::ofstream(cache) << text.str();
  auto reg = probing_registry(cache);
  CHECK_FALSE(reg.load_file(kFaults / "libload_segfault.so"));
  CHECK(reg.probes_run() == 1);
  CHECK(test::slurp(cache) == text.str());
}

TEST_CASE("a damaged probe cache of orch's counts as empty and is replaced", "[plugins]") {
  test::TempDir tmp;
  const auto cache = tmp.path() / "probes.tsv";
  std::ofstream(cache) << "# orch plugin load probe verdicts; safe to delete. host: orch 0.0.1\n"
                       << "safe\tnot-a-size\n";
  auto reg = probing_registry(cache);
  CHECK_FALSE(reg.load_file(kFaults / "libload_segfault.so"));
  CHECK(reg.probes_run() == 1);
  CHECK_THAT(test::slurp(cache), Contains("refused\t"));
}

TEST_CASE("symbolic link loops in a plugin folder are reported and skipped", "[plugins]") {
  BadFolder f;
  auto reg = probing_registry(f.cache, 1s);
  reg.load_directories({f.dir, f.loop_dir});
  CHECK(reg.names(PluginKind::kModel) == std::vector<std::string>{"fault"});
  std::string all;
  for (const auto& r : reg.refused()) all += r.reason + "\n";
  INFO(all);
  const std::string loop = ": Too many levels of symbolic links";
  CHECK_THAT(all,
             Contains("skipped plugin folder entry " + (f.dir / "libloop.so").string() + loop));
  CHECK_THAT(all,
             Contains("skipped plugin folder entry " + (f.dir / "libcycle_a.so").string() + loop));
  CHECK_THAT(all,
             Contains("skipped plugin folder entry " + (f.dir / "libcycle_b.so").string() + loop));
  CHECK_THAT(all, Contains("skipped plugin folder " + f.loop_dir.string() + loop));
  CHECK_THAT(all, Contains("libload_segfault.so refused: its load-time code was killed by signal"));
  CHECK_THAT(all, Contains("libnot_orch.so: not an orch plugin"));
  CHECK(reg.refused().size() == 8);  // 3 load faults, 3 entry loops, the folder, not_orch
}

TEST_CASE("orch plugins, plan and run go on past crashing libraries and symbolic link loops",
          "[cli]") {
  BadFolder f;
  const std::string refused = "plugin library " + f.dir.string();
  const std::string loop = ": Too many levels of symbolic links";

  const auto list = test::run_command(f.orch("plugins"));
  INFO(list.output);
  CHECK(list.exit_code == 0);
  CHECK_THAT(list.output, Contains("file: " + (f.dir / "libfault.so").string()));
  CHECK_THAT(list.output, Contains("file: " + (kBuilt / "liborch_model_resnet.so").string()));
  CHECK_THAT(list.output,
             Contains("refused: " + refused +
                      "/libload_segfault.so refused: its load-time code was killed by signal 11 "
                      "(SIGSEGV)"));
  CHECK_THAT(list.output, Contains("refused: " + refused +
                                   "/libload_exit.so refused: its load-time code called exit(0) "
                                   "while loading"));
  CHECK_THAT(list.output, Contains("refused: " + refused +
                                   "/libload_hang.so refused: its load-time code did not finish "
                                   "within 1 s"));
  CHECK_THAT(list.output, Contains("refused: skipped plugin folder entry " +
                                   (f.dir / "libloop.so").string() + loop));
  CHECK_THAT(list.output, Contains("refused: skipped plugin folder " + f.loop_dir.string() + loop));
  // Remembered for the next command: the good, the crashing and the hanging libraries.
  CHECK(cache_lines(f.cache, kBuilt / "liborch_model_resnet.so").size() == 1);
  CHECK(cache_lines(f.cache, f.dir / "libload_segfault.so").size() == 1);
  CHECK(cache_lines(f.cache, f.dir / "libload_hang.so").size() == 1);

  test::TempDir work;
  std::ofstream(work.path() / "tiny.yaml") << kTiny;
  const auto plan = test::run_command(f.orch("plan " + q(work.path() / "tiny.yaml")));
  INFO(plan.output);
  CHECK(plan.exit_code == 0);
  CHECK_THAT(plan.output, Contains("1 run (1 configuration x 1 repeat)"));
  CHECK_THAT(plan.output, Contains("orch: warning: " + refused +
                                   "/libload_segfault.so refused: its load-time code was killed "
                                   "by signal 11 (SIGSEGV)"));
  CHECK_THAT(plan.output, Contains("orch: warning: skipped plugin folder entry " +
                                   (f.dir / "libcycle_a.so").string() + loop));

  const auto db = work.path() / "r.db";
  const auto run =
      test::run_command(f.orch("--db " + q(db) + " run " + q(work.path() / "tiny.yaml")));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.output, Contains("sweep tiny"));
  CHECK_THAT(run.output, Contains("libload_exit.so refused: its load-time code called exit(0)"));
  CHECK(fs::exists(db));
}

TEST_CASE("orch probes a library once, and again when the file changes", "[cli]") {
  BadFolder f;
  const auto log = f.tmp.path() / "loads.txt";
  const auto lib = f.dir / "libnot_orch.so";
  const std::string env = "ORCH_TEST_LOAD_LOG=" + q(log);
  // Each load appends "loaded PID": the orch process's own, and the probe child's when the
  // library is probed.
  auto loads = [&] {
    std::istringstream in(test::slurp(log));
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.rfind("loaded ", 0) == 0;
    return n;
  };
  REQUIRE(test::run_command(f.orch("plugins", env)).exit_code == 0);
  CHECK(loads() == 2);  // probed, then loaded
  REQUIRE(test::run_command(f.orch("plugins", env)).exit_code == 0);
  CHECK(loads() == 3);  // loaded only: the verdict came from the cache
  install(fs::path(ORCH_TEST_PLUGIN_DIR) / "libnot_orch.so", lib);
  REQUIRE(test::run_command(f.orch("plugins", env)).exit_code == 0);
  CHECK(loads() == 5);  // a new file: probed again
  CHECK(cache_lines(f.cache, lib).size() == 1);
}

TEST_CASE("the probe cache reads and replaces only a regular file of a sane size", "[plugins]") {
  test::TempDir tmp;
  const auto lib = fs::path(ORCH_FAULT_PLUGIN_DIR) / "libfault.so";
  const auto id = identify(lib);
  REQUIRE(id.has_value());
  LoadProbeVerdict safe;
  // A FIFO at the cache's path: neither read (which would wait for a writer) nor replaced.
  const auto fifo = tmp.path() / "fifo-cache";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  {
    ProbeCache cache(fifo);  // returns at once
    CHECK_FALSE(cache.find(*id).has_value());
    cache.put(*id, safe);
  }
  CHECK(fs::is_fifo(fifo));
  // A device: /dev/zero is not read for ever, /dev/null is not replaced by a text file.
  if (fs::exists("/dev/zero") && fs::exists("/dev/null")) {
    ProbeCache zero("/dev/zero");
    CHECK_FALSE(zero.find(*id).has_value());
    ProbeCache null("/dev/null");
    null.put(*id, safe);
    CHECK(fs::is_character_file("/dev/null"));
  }
  // A file far larger than any cache is not read either.
  const auto big = tmp.path() / "big-cache";
  {
    std::ofstream out(big);
    out << std::string(5 << 20, 'x');
  }
  CHECK_FALSE(ProbeCache(big).find(*id).has_value());
  // The ordinary file: written and read back.
  const auto file = tmp.path() / "cache";
  ProbeCache(file).put(*id, safe);
  const auto again = ProbeCache(file).find(*id);
  REQUIRE(again.has_value());
  CHECK(again->safe);
}
