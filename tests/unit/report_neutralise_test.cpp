// Text that reaches a terminal or a spreadsheet is neutralised: control characters in names,
// descriptions and error lines are shown escaped (rank table, plan table, compare, progress),
// and CSV text cells a spreadsheet would evaluate as a formula are quoted as OWASP advises.
#include <algorithm>
#include <catch2/catch.hpp>

#include "plan/plan_table.h"
#include "report/compare.h"
#include "report/export.h"
#include "report/metric_catalog.h"
#include "report/rank_table.h"
#include "report/ranking.h"
#include "report/sweep_diff.h"
#include "result/result_document.h"
#include "storage/store.h"
#include "sweep/progress.h"
#include "text/terminal_text.h"
#include "unit/plan_test_catalog.h"
#include "unit/store_test_support.h"

using namespace orch;

namespace {

// ESC [2J clears the screen, ESC ]0; retitles the window; U+009B is the one-byte CSI.
const std::string kEvil =
    "fast\x1b[2J\x1b]0;pwned\x07\nfake row\t\xc2\x9b"
    "31m";

bool has_control(const std::string& s, bool newlines_allowed) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n' && newlines_allowed) continue;
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      return true;
    }
  }
  // The bidirectional overrides and isolates, raw: U+202E and U+2066 (UTF-8).
  return s.find("\xe2\x80\xae") != std::string::npos || s.find("\xe2\x81\xa6") != std::string::npos;
}

}  // namespace

TEST_CASE("terminal text: control characters are shown escaped, the rest kept", "[report]") {
  CHECK(terminal_text(kEvil) == "fast\\x1b[2J\\x1b]0;pwned\\x07\\nfake row\\t\\u009b31m");
  CHECK(terminal_text("amp-bf16/b256 µ ü 日本") == "amp-bf16/b256 µ ü 日本");
  CHECK(terminal_text(std::string("a\0b\x7f", 4)) == "a\\x00b\\x7f");
  // Trojan Source: a right-to-left override shows "exe.txt" as "txt.exe"; isolates, marks and
  // the line separator are escaped too, by code point.
  CHECK(terminal_text("\u202etxt.exe\u2066x\u2069\u200f\u061c\u2028") ==
        "\\u202etxt.exe\\u2066x\\u2069\\u200f\\u061c\\u2028");
  CHECK(terminal_text("\u2014 \u2030 \u20ac") == "\u2014 \u2030 \u20ac");  // neighbours kept
  // Bytes that no UTF-8 character holds, each shown by value: a lone 0x9b is CSI to an 8-bit
  // terminal; Latin-1, a surrogate, past U+10FFFF and a cut sequence are not text either.
  CHECK(terminal_text("s\x9b"
                      "31m caf\xe9 \xed\xa0\x80 \xf4\x90\x80\x80 \xc3") ==
        "s\\x9b31m caf\\xe9 \\xed\\xa0\\x80 \\xf4\\x90\\x80\\x80 \\xc3");
  CHECK(terminal_text("\xf0\x9f\x98\x80 \xe0\xa0\x80") == "\xf0\x9f\x98\x80 \xe0\xa0\x80");
}

TEST_CASE("terminal text: progress lines escape the name, the error and the best name",
          "[report][sweep]") {
  sweep::ProgressState p;
  p.done = 1;
  p.total = 2;
  p.best = std::make_pair(kEvil, 10.0);
  const ResultDocument failed =
      result_from_json({{"status", "failed"}, {"error", "boom\x1b[31m red"}});
  const std::string line = sweep::format_progress(p, kEvil, 0, "cpu", failed);
  INFO(line);
  CHECK_FALSE(has_control(line, false));
  CHECK_THAT(line, Catch::Contains("boom\\x1b[31m red"));
}

TEST_CASE("terminal text: the plan table escapes run names and swept values", "[report][plan]") {
  Plan p = test::plan_text("name: x\nmatrix:\n  seed: [1, 2]\n");
  p.runs[0].name = kEvil;
  p.runs[0].swept.begin()->second = kEvil;
  const std::string table = format_plan_table(p);
  INFO(table);
  CHECK_FALSE(has_control(table, true));
  // One line per run plus the header and the count: the name's newline forged no row.
  CHECK(std::count(table.begin(), table.end(), '\n') == 4);
}

TEST_CASE("terminal text: rank and compare escape names, diagnoses and sweep descriptions",
          "[report]") {
  test::TempDb db;
  storage::Store store(db.path);
  const auto id = store.open_sweep("s\x1b[2J", "exp", "exp\x1b.yaml");
  store.record(id, test::result_doc(kEvil, "h1", 0, "ok", 1500));
  store.record(id, test::result_doc("plain", "h2", 0, "ok", 1000));
  const auto runs = store.runs(id);
  const std::string rank =
      format_rank_table(rank_runs(runs, require_metric("images_per_s")), *store.sweep(id));
  INFO(rank);
  CHECK_FALSE(has_control(rank, true));
  CHECK_THAT(rank, Catch::Contains("fast\\x1b[2J"));
  const std::string cmp =
      format_comparison(select_runs(store, runs, "plain"), select_runs(store, runs, kEvil));
  INFO(cmp);
  CHECK_FALSE(has_control(cmp, true));
  const std::string nights = format_sweep_diff(SweepDiff{}, "night\x1b[2J", "\u202enight");
  INFO(nights);
  CHECK_FALSE(has_control(nights, true));
  CHECK_THAT(nights, Catch::Contains("night\\x1b[2J") && Catch::Contains("\\u202enight"));
}

TEST_CASE("CSV export: formula-like text cells are quoted with a leading quote, numbers kept",
          "[report][export]") {
  ExportTable t;
  t.columns = {"name", "value", "text_number"};
  for (const std::string evil : {"=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0", "-2+3",
                                 "@SUM(A1:A9)", "\tx", "\rx"}) {
    t.rows.push_back({evil, -1.5, "-1.5"});
  }
  t.rows.push_back({"plain", 2, "+3e4"});
  const std::string csv = to_csv(t);
  INFO(csv);
  CHECK_THAT(csv, Catch::Contains("\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",-1.5,-1.5\r\n"));
  CHECK_THAT(csv, Catch::Contains("\"'+1+cmd|' /C calc'!A0\",-1.5,-1.5\r\n"));
  CHECK_THAT(csv, Catch::Contains("\"'-2+3\",-1.5,-1.5\r\n"));
  CHECK_THAT(csv, Catch::Contains("\"'@SUM(A1:A9)\",-1.5,-1.5\r\n"));
  CHECK_THAT(csv, Catch::Contains("\"'\tx\",-1.5,-1.5\r\n"));
  CHECK_THAT(csv, Catch::Contains("\"'\rx\",-1.5,-1.5\r\n"));
  CHECK_THAT(csv, Catch::Contains("plain,2,+3e4\r\n"));
}
