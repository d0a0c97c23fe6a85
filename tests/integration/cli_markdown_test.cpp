// `orch help --markdown` and `orch plugins --markdown` from the binary: the tables docs/cli.md
// and docs/plugins.md paste come from the real commands and plugins, a named command or plugin
// prints its table alone, and what names nothing is refused as bad input.
#include <catch2/catch.hpp>

#include "integration/test_support.h"

using namespace orch;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// Standard output alone: the refusals and warnings a command writes on stderr are left out.
test::CommandResult stdout_of(const std::string& args) {
  return test::run_command(std::string("( '") + ORCH_BINARY + "' " + args + " 2>/dev/null )");
}

}  // namespace

TEST_CASE("orch help --markdown: every listed command, one command's table, orch's own options",
          "[cli][docgen]") {
  auto all = test::run_orch("help --markdown");
  INFO(all.output);
  CHECK(all.exit_code == 0);
  CHECK_THAT(all.output, StartsWith("### `orch`\n"));
  CHECK_THAT(all.output, Contains("\n### `orch sweep`\n"));
  CHECK_THAT(all.output, Contains("\n### `orch dataset make`\n"));
  CHECK_THAT(all.output, Contains("| `--until` | TEXT |"));
  CHECK_THAT(all.output, !Contains("health-check"));  // internal, hidden from --help too

  auto make = test::run_orch("help --markdown dataset make");
  INFO(make.output);
  CHECK(make.exit_code == 0);
  CHECK_THAT(make.output, StartsWith("| option | type | default | allowed | meaning |\n"));
  CHECK_THAT(make.output, Contains("| `--classes` (required) | INT | | 1 to 100000 |"));
  CHECK_THAT(make.output, Contains("| `--quality` | INT | `90` | 1 to 100 |"));

  auto global = test::run_orch("help --markdown --global");
  INFO(global.output);
  CHECK(global.exit_code == 0);
  CHECK_THAT(global.output, Contains("| `--db` | TEXT | `results.db` |"));
  CHECK_THAT(global.output, !Contains("--until"));
}

TEST_CASE("orch help without --markdown is a command's --help; unknown commands are refused",
          "[cli][docgen]") {
  auto text = test::run_orch("help export");
  INFO(text.output);
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.output, Contains("--format"));
  CHECK_THAT(text.output, !Contains("| option |"));

  auto bad = test::run_orch("help --markdown nosuch");
  INFO(bad.output);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Contains("orch help: no command 'nosuch'"));
  CHECK_THAT(bad.output, Contains("dataset make"));

  auto both = test::run_orch("help --markdown --global sweep");
  CHECK(both.exit_code == 2);
}

TEST_CASE("orch plugins --markdown: the built plugins' schemas; refusals stay off stdout",
          "[cli][docgen]") {
  const std::string test_plugins = std::string("--plugin-path '") + ORCH_TEST_PLUGIN_DIR + "' ";
  auto all = stdout_of(test_plugins + "plugins --markdown");
  INFO(all.output);
  CHECK(all.exit_code == 0);
  CHECK_THAT(all.output, StartsWith("### `resnet` (model)\n"));
  CHECK_THAT(all.output, Contains("\n### `synthetic` (data)\n"));
  CHECK_THAT(all.output, Contains("| `depth` | int | `50` | `18`, `34`, `50`, `101`, `152` |"));
  // The broken test libraries' refusals go to stderr.
  CHECK_THAT(all.output, !Contains("libabi_mismatch"));
  CHECK_THAT(all.output, !Contains("orch: warning"));
  CHECK_THAT(all.output, !Contains("file:"));  // no machine's paths in the docs

  auto amp = test::run_orch("plugins --markdown amp");
  INFO(amp.output);
  CHECK(amp.exit_code == 0);
  CHECK_THAT(amp.output, StartsWith("precision plugin, version "));
  CHECK_THAT(amp.output, Contains("| `dtype` | string | `bf16` | `bf16`, `fp16` |"));
  CHECK_THAT(amp.output, !Contains("`depth`"));

  auto none = test::run_orch("plugins --markdown nosuch");
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.output, Contains("no plugin named 'nosuch'"));
  auto plain = test::run_orch("plugins amp");  // the list shows every plugin: no names there
  CHECK(plain.exit_code == 2);
}
