// The Markdown that `orch help --markdown` and `orch plugins --markdown` write into docs/: table
// cells that GitHub renders as the text they hold.
#include <catch2/catch.hpp>

#include "docgen/markdown.h"

namespace orch::docgen {
namespace {

TEST_CASE("docgen: a code span keeps backticks literal and escapes a cell's pipe",
          "[docgen][markdown]") {
  CHECK(code("--db") == "`--db`");
  CHECK(code("csv|json") == "`csv\\|json`");
  CHECK(code("a`b") == "``a`b``");
  CHECK(code("`x`") == "`` `x` ``");
}

TEST_CASE("docgen: prose escapes markup outside code spans only", "[docgen][markdown]") {
  CHECK(cell("SRC/<class>/*.JPEG or a|b") == "SRC/&lt;class&gt;/\\*.JPEG or a\\|b");
  CHECK(cell("see `orch submit` and `a<b*c`") == "see `orch submit` and `a<b*c`");
  CHECK(cell("`x|y` z|w") == "`x\\|y` z\\|w");
  CHECK(cell("batch_size: two\nlines") == "batch_size: two lines");
}

TEST_CASE("docgen: a table pads short rows to the header's width", "[docgen][markdown]") {
  CHECK(table({"a", "b", "c"}, {{"1", "2", "3"}, {"x"}}) ==
        "| a | b | c |\n"
        "|---|---|---|\n"
        "| 1 | 2 | 3 |\n"
        "| x | | |\n");
}

}  // namespace
}  // namespace orch::docgen
