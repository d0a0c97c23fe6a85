// The `workload` and `args` keys in the planner: what a script run's configuration holds, how
// the script's content enters its hash, how matrix combinations that only differ in keys the
// workload ignores merge, the errors (at their line and column), and the JSON specification
// `orch exec` reads back.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "plan/content_hash.h"
#include "plan/run_spec_json.h"
#include "plan/workload_config.h"
#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;

// A folder holding an experiment file and the scripts it names, removed afterwards.
class Folder {
 public:
  Folder() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("orch-workload-" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }
  Plan plan(const std::string& yaml) const {
    return make_plan_from_string(yaml, (path_ / "exp.yaml").string(), test::test_catalog());
  }
  PlanError failure(const std::string& yaml) const {
    try {
      plan(yaml);
    } catch (const PlanError& e) {
      return e;
    }
    FAIL("expected a PlanError for:\n" << yaml);
    throw std::logic_error("unreachable");
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

constexpr const char* kScriptBase =
    "name: s\nbase:\n  workload: {kind: script, command: \"train.py --data synthetic\"}\n";

}  // namespace

TEST_CASE("content hash: XXH3-128's reference value and the bytes of a file", "[plan][workload]") {
  // xxHash's published XXH3-128 of no bytes; the canonical (big-endian) digits.
  CHECK(content_hash_hex("") == "99aa06d3014798d86001c324468d497f");
  CHECK(content_hash_hex("abc").size() == 32);
  CHECK(content_hash_hex("abc") != content_hash_hex("abd"));
  Folder folder;
  const auto file = folder.write("train.py", "print('hi')\n");
  CHECK(file_content_hash_hex(file.string()) == content_hash_hex("print('hi')\n"));
  CHECK_FALSE(file_content_hash_hex((folder.path() / "missing.py").string()).has_value());
  // Read in chunks: a file over several chunks hashes as its bytes at once do.
  std::string big(3 * (1 << 20) + 5, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 4096);
  CHECK(file_content_hash_hex(folder.write("model.pt", big).string()) == content_hash_hex(big));
  // One plan reads a file once: its digest stays what the plan first read.
  FileDigests digests;
  CHECK(digests.of(file.string()) == content_hash_hex("print('hi')\n"));
  folder.write("train.py", "print('edited')\n");
  CHECK(digests.of(file.string()) == content_hash_hex("print('hi')\n"));
  CHECK(FileDigests().of(file.string()) == content_hash_hex("print('edited')\n"));
}

TEST_CASE("workload: commands split like a shell, args become sorted words", "[plan][workload]") {
  CHECK(split_command("  train.py --data  synthetic ") ==
        std::vector<std::string>{"train.py", "--data", "synthetic"});
  CHECK(split_command(R"(a 'b c' "d \"e\" \\f" g\ h 'i'"j")") ==
        std::vector<std::string>{"a", "b c", R"(d "e" \f)", "g h", "ij"});
  CHECK(split_command("''") == std::vector<std::string>{""});
  CHECK_THROWS_WITH(split_command("a 'b"), Contains("unterminated '"));
  CHECK_THROWS_WITH(split_command("a \"b"), Contains("unterminated \""));

  const nlohmann::json args = {{"workers", 8}, {"compile", "off"}, {"amp", true}, {"lr", 0.5}};
  CHECK(arg_words(args) == std::vector<std::string>{"--amp", "true", "--compile", "off", "--lr",
                                                    "0.5", "--workers", "8"});
  // Small and large floats reach the program as the numbers they are, not rounded to 0.000000.
  for (const double lr : {1e-7, 3.0e-5, 1e30, 0.1}) {
    const auto words = arg_words(nlohmann::json{{"lr", lr}});
    REQUIRE(words.size() == 2);
    CHECK(std::stod(words[1]) == lr);
  }
}

TEST_CASE("workload: a script run's configuration keeps only what a program uses",
          "[plan][workload]") {
  Folder f;
  f.write("train.py", "print('hi')\n");
  Plan p = f.plan(std::string(kScriptBase) +
                  "  args: {amp: fp16, channels_last: true, compile: off, workers: 8}\n"
                  "  model: resnet\n  precision: amp\n  batch_size: 32\n");
  REQUIRE(p.runs.size() == 1);
  const RunSpec& r = p.runs[0];
  CHECK(r.workload.is_script());
  for (const char* key :
       {"model", "data", "precision", "stream", "memory_format", "cudnn_benchmark", "optimizer",
        "cuda_connections", "profile", "isolation"}) {
    INFO(key);
    CHECK_FALSE(r.config.json().contains(key));
  }
  CHECK(r.config.json()["batch_size"] == 32);
  // `off` is the word the program reads, not YAML 1.1's false; true is a boolean.
  CHECK(
      r.config.json()["args"] ==
      nlohmann::json{{"amp", "fp16"}, {"channels_last", true}, {"compile", "off"}, {"workers", 8}});
  const auto w = r.config.json()["workload"];
  CHECK(w["script_word"] == 0);
  CHECK(w["script_path"] == fs::weakly_canonical(f.path() / "train.py").string());
  CHECK(w["script_xxh128"] == content_hash_hex("print('hi')\n"));
  CHECK(r.workload.script_xxh128 == content_hash_hex("print('hi')\n"));

  // The JSON specification exec reads holds everything back.
  const RunSpec back = run_spec_from_json(run_spec_json(r));
  CHECK(back.workload.is_script());
  CHECK(back.workload.command == "train.py --data synthetic");
  CHECK(back.workload.script_path == r.workload.script_path);
  CHECK(back.args == r.config.json()["args"]);
  CHECK(back.batch_size == 32);

  // A built-in run has neither workload nor args: its configuration is what it always was.
  Plan b = f.plan("name: b\nbase:\n  args: {workers: 8}\n");
  CHECK_FALSE(b.runs[0].config.json().contains("args"));
  CHECK_FALSE(b.runs[0].config.json().contains("workload"));
  CHECK(b.runs[0].hash == f.plan("name: b\n").runs[0].hash);
  CHECK_FALSE(run_spec_from_json(run_spec_json(b.runs[0])).workload.is_script());
}

TEST_CASE("workload: the hash covers the script's content, not where it lies", "[plan][workload]") {
  Folder f, g;
  f.write("train.py", "one\n");
  g.write("train.py", "one\n");
  const std::string plain = f.plan(kScriptBase).runs[0].hash;
  CHECK(g.plan(kScriptBase).runs[0].hash == plain);  // the same bytes elsewhere
  // Built-in keys do not reach a script run.
  CHECK(f.plan(std::string(kScriptBase) + "  precision: amp\n").runs[0].hash == plain);
  f.write("train.py", "two\n");
  CHECK(f.plan(kScriptBase).runs[0].hash != plain);
  f.write("train.py", "one\n");
  CHECK(f.plan(std::string(kScriptBase) + "  args: {workers: 4}\n").runs[0].hash != plain);
}

TEST_CASE("workload: swept beside built-in keys, configurations the workload ignores merge",
          "[plan][workload]") {
  Folder f;
  f.write("train.py", "x\n");
  Plan p = f.plan(std::string(kScriptBase) +
                  "matrix:\n  workload.kind: [builtin, script]\n  precision: [fp32, amp]\n"
                  "  args.workers: [4, 8]\n");
  // builtin x {fp32, amp} (args dropped: 4 and 8 merge), script x {4, 8} (precision dropped).
  REQUIRE(p.runs.size() == 4);
  std::multiset<std::string> kinds;
  std::set<std::string> names;
  for (const RunSpec& r : p.runs) {
    kinds.insert(r.workload.kind);
    names.insert(r.name);
  }
  CHECK(kinds == std::multiset<std::string>{"builtin", "builtin", "script", "script"});
  CHECK(names.size() == 4);
  for (const RunSpec& r : p.runs) {
    INFO(r.name);
    CHECK(r.swept.at("workload.kind") == r.workload.kind);
    if (r.workload.is_script()) {
      CHECK(r.swept.at("precision") == "-");
      CHECK(r.name.find("script") != std::string::npos);
    } else {
      CHECK(r.swept.at("args.workers") == "-");
    }
  }
}

TEST_CASE(
    "workload: a relative script is found beside the experiment file, then in the "
    "current directory",
    "[plan][workload]") {
  Folder f, cwd;
  cwd.write("sub/here.py", "cwd\n");
  const fs::path old = fs::current_path();
  fs::current_path(cwd.path());
  const std::string yaml = "name: s\nbase:\n  workload: {kind: script, command: sub/here.py}\n";
  CHECK(f.plan(yaml).runs[0].workload.script_xxh128 == content_hash_hex("cwd\n"));
  f.write("sub/here.py", "beside\n");
  CHECK(f.plan(yaml).runs[0].workload.script_xxh128 == content_hash_hex("beside\n"));
  // A program on PATH runs the script that follows it.
  const std::string py = "name: s\nbase:\n  workload: {kind: script, command: 'sh sub/here.py'}\n";
  CHECK(f.plan(py).runs[0].workload.script_word == 1);
  fs::current_path(old);
}

TEST_CASE("workload: errors point at the setting at fault", "[plan][workload]") {
  Folder f;
  f.write("train.py", "x\n");
  PlanError e = f.failure("name: s\nbase:\n  workload: {kind: scripted}\n");
  CHECK(e.line == 3);
  CHECK(e.col == 20);
  CHECK(e.key_path == "base.workload.kind");
  CHECK_THAT(e.message, Contains("'scripted'"));
  CHECK(e.allowed == "builtin, script");

  e = f.failure("name: s\nbase:\n  workload: {kind: script}\n");
  CHECK(e.key_path == "base.workload.kind");
  CHECK(e.line == 3);
  CHECK_THAT(e.message, Contains("needs a command"));

  e = f.failure("name: s\nbase:\n  workload:\n    kind: script\n    command: missing.py\n");
  CHECK(e.key_path == "base.workload.command");
  CHECK(e.line == 5);
  CHECK(e.col == 14);
  CHECK_THAT(e.message, Contains("'missing.py' is in neither " + f.path().string() +
                                 " (the experiment file's folder) nor "));
  CHECK_THAT(e.message, Contains("(the current directory)"));

  e = f.failure("name: s\nbase:\n  workload: {kind: script, command: \"train.py 'x\"}\n");
  CHECK_THAT(e.message, Contains("unterminated '"));

  e = f.failure("name: s\nbase:\n  workload: {kind: script, command: no-such-program-x}\n");
  CHECK_THAT(e.message, Contains("nor PATH"));

  e = f.failure(std::string(kScriptBase) + "  args: {'bad name': 1}\n");
  CHECK(e.key_path == "base.args.bad name");
  CHECK(e.line == 4);
  CHECK_THAT(e.message, Contains("not a valid name in 'args'"));
  CHECK(e.allowed == "[A-Za-z0-9_-]+");

  e = f.failure(std::string(kScriptBase) + "  args: {workers: [1, 2]}\n");
  CHECK(e.key_path == "base.args.workers");
  CHECK_THAT(e.message, Contains("expected a scalar, got a list"));

  e = f.failure(std::string(kScriptBase) + "matrix:\n  args.a.b: [1, 2]\n");
  CHECK(e.line == 5);
  CHECK_THAT(e.message, Contains("nested too deeply"));

  e = f.failure(std::string(kScriptBase) + "matrix:\n  args.x!: [1, 2]\n");
  CHECK(e.line == 5);
  CHECK(e.col == 3);
  CHECK_THAT(e.message, Contains("'x!' is not a valid name in 'args'"));
}

}  // namespace orch

namespace orch {

TEST_CASE("steps.warmup auto: orch's own loop only; a script's warm-up is its program's",
          "[plan][workload][warmup]") {
  Folder f;
  f.write("train.py", "x\n");  // the script exists: the warm-up is the only problem
  const PlanError e = f.failure(std::string(kScriptBase) + "  steps: {warmup: auto, measure: 5}\n");
  CHECK(e.key_path == "base.steps.warmup");
  CHECK_THAT(e.message, Catch::Contains("a script run's loop is its program's"));
  CHECK(e.allowed == "an int >= 0 for a script workload");
}

}  // namespace orch
