// `orch help --markdown`: option tables read back from CLI11 definitions, checked on an app made
// here so every kind of option, validator and hidden entry is covered (the real commands are
// checked against docs/cli.md by "docs: generated tables match orch").
#include <catch2/catch.hpp>

#include "docgen/cli_markdown.h"

namespace orch::docgen {
namespace {

struct Values {
  std::string file, format = "csv", sweep;
  std::vector<std::string> overrides, pair, paths;
  double share = 0.9;
  int count = 3, per_class = 0;
  double fraction = 1;
  bool flag = false;
};

// A root with global options, a command using each feature, a nested command and hidden ones.
std::unique_ptr<CLI::App> sample_app(Values& v) {
  auto app = std::make_unique<CLI::App>("the tool");
  app->add_option("--plugin-path", v.paths, "extra folder (repeatable)");
  auto* cmd = app->add_subcommand("export", "write the runs");
  cmd->add_option("file", v.file, "experiment YAML")->required();
  cmd->add_option("overrides", v.overrides, "key=value overrides");
  cmd->add_option("--format", v.format, "csv or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"csv", "json"}));
  cmd->add_option("--share", v.share, "a share")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 1.0));
  cmd->add_option("--count", v.count, "how many")->check(CLI::PositiveNumber);
  cmd->add_option("--sweeps", v.pair, "two sweeps")->expected(2);
  cmd->add_option("-o,--output", v.sweep, "a <file> | or *stdout*");
  cmd->add_flag("--json", v.flag, "print JSON");
  cmd->add_option("--hidden", v.count, "internal")->group("");
  auto* nested = app->add_subcommand("dataset", "datasets");
  auto* make = nested->add_subcommand("make", "make one");
  auto* per_class = make->add_option("--per-class", v.per_class, "M of each class");
  make->add_option("--fraction", v.fraction, "F of each class")->excludes(per_class);
  app->add_subcommand("health-check", "internal")->group("");
  return app;
}

TEST_CASE("docgen: every listed command, nested ones after their parent, hidden ones left out",
          "[docgen][cli]") {
  Values v;
  auto app = sample_app(v);
  std::vector<std::string> paths;
  for (const CLI::App* c : listed_commands(*app)) paths.push_back(command_path(*c));
  CHECK(paths == std::vector<std::string>{"orch export", "orch dataset", "orch dataset make"});
  CHECK(find_command(*app, {}) == app.get());
  CHECK(find_command(*app, {"dataset", "make"}) != nullptr);
  CHECK(find_command(*app, {"make"}) == nullptr);
  CHECK(find_command(*app, {"health-check"}) == nullptr);
}

TEST_CASE("docgen: an option table says type, default, allowed values and meaning",
          "[docgen][cli]") {
  Values v;
  auto app = sample_app(v);
  CHECK(command_markdown(*find_command(*app, {"export"})) ==
        "| option | type | default | allowed | meaning |\n"
        "|---|---|---|---|---|\n"
        "| `file` (required) | TEXT | | | experiment YAML |\n"
        "| `overrides` | TEXT ... | | | key=value overrides |\n"
        "| `--format` | TEXT | `csv` | `csv`, `json` | csv or json |\n"
        "| `--share` | FLOAT | `0.9` | 0.05 to 1 | a share |\n"
        "| `--count` | INT | | &gt; 0 | how many |\n"
        "| `--sweeps` | 2 x TEXT | | | two sweeps |\n"
        "| `-o`, `--output` | TEXT | | | a &lt;file&gt; \\| or \\*stdout\\* |\n"
        "| `--json` | flag | | | print JSON |\n");
}

TEST_CASE("docgen: exclusions are said, subcommands listed, an empty command says so",
          "[docgen][cli]") {
  Values v;
  auto app = sample_app(v);
  const std::string make = command_markdown(*find_command(*app, {"dataset", "make"}));
  CHECK_THAT(make, Catch::Contains("| `--fraction` | FLOAT | | | F of each class. Not with "
                                   "`--per-class`. |"));
  CHECK(command_markdown(*find_command(*app, {"dataset"})) ==
        "No options.\n\nCommands: `orch dataset make`.\n");
}

TEST_CASE("docgen: the whole reference heads each command with its path and description",
          "[docgen][cli]") {
  Values v;
  auto app = sample_app(v);
  const std::string all = cli_markdown(*app);
  CHECK(all.rfind("### `orch`\n\nthe tool\n\n| option |", 0) == 0);
  CHECK_THAT(all, Catch::Contains("\n### `orch export`\n\nwrite the runs\n\n| option |"));
  CHECK_THAT(all, Catch::Contains("\n### `orch dataset make`\n\nmake one\n\n"));
  CHECK_THAT(all, !Catch::Contains("health-check"));
  CHECK_THAT(all, !Catch::Contains("--hidden"));
  CHECK_THAT(all, !Catch::Contains("--help"));
}

}  // namespace
}  // namespace orch::docgen
