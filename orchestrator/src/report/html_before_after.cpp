// The report's before/after section (html_before_after.h).
#include "report/html_before_after.h"

#include <fmt/format.h>

#include "report/compare.h"
#include "report/environment_diff.h"
#include "report/html_escape.h"

namespace orch {
namespace {

std::string esc(const std::string& s) { return html_escape(s); }

std::string comparison_table(const Selection& a, const Selection& b) {
  std::string out = fmt::format(
      "<table class=\"compare\"><thead><tr><th></th><th class=\"num\">before: {} ({} run{})</th>"
      "<th class=\"num\">after: {} ({} run{})</th><th "
      "class=\"num\">change</th></tr></thead><tbody>\n",
      esc(a.label), a.runs.size(), a.runs.size() == 1 ? "" : "s", esc(b.label), b.runs.size(),
      b.runs.size() == 1 ? "" : "s");
  for (const ComparisonLine& l : comparison_lines(a, b)) {
    const bool indent = l.label.rfind("  ", 0) == 0;
    const std::string label = indent ? l.label.substr(2) : l.label;
    auto cell = [&](const std::optional<double>& v) {
      return v ? fmt::format("{:.{}f}", *v, l.decimals) : std::string("-");
    };
    out += fmt::format(
        "<tr><td{}>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td></tr>\n",
        indent ? " class=\"indent\"" : "", esc(label), cell(l.a), cell(l.b),
        l.change_pct ? fmt::format("{:+.1f}%", *l.change_pct) : "-");
  }
  return out + "</tbody></table>\n";
}

// A two-column "before -> after" table under a heading, or one line when nothing differs.
template <class Row>
std::string changes_table(const std::string& css, const std::string& title, const std::string& none,
                          const std::vector<Row>& rows, const std::string& (*name)(const Row&)) {
  std::string out = "<h3>" + title + "</h3>\n";
  if (rows.empty()) return out + "<p>" + none + "</p>\n";
  out += "<table class=\"" + css +
         "\"><thead><tr><th></th><th>before</th><th>after</th></tr></thead><tbody>\n";
  for (const Row& r : rows) {
    out += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n", esc(name(r)),
                       esc(r.a), esc(r.b));
  }
  return out + "</tbody></table>\n";
}

const std::string& setting_key(const SettingChange& c) { return c.key; }
const std::string& environment_fact(const EnvironmentChange& c) { return c.fact; }

}  // namespace

std::string before_after_section(const ReportData& d) {
  std::string out = "<section id=\"before-after\"><h2>Before and after</h2>\n";
  if (!d.baseline || !d.best) {
    return out + "<p>A before/after table needs two ranked configurations; this sweep has " +
           std::to_string(d.ranking.rows.size()) + ".</p></section>\n";
  }
  const Selection& a = *d.baseline;
  const Selection& b = *d.best;
  out += fmt::format(
      "<p class=\"note\">Baseline (before) is {}, the one the speed-up column divides by; after "
      "is the fastest. Values are means over each side's successful runs, as <code>orch "
      "compare</code> computes them; change = (after - before) / before.</p>\n",
      d.ranking.baseline.empty()
          ? std::string("the sweep's <b>slowest</b> configuration (the experiment file names no "
                        "<code>baseline:</code>)")
          : "the experiment file's <code>baseline:</code>, <b>" + esc(d.ranking.baseline) + "</b>");
  // The verdict first: whether the difference is beyond the runs' noise, as compare says it.
  // A: before, B: after, in the verdict's words; a line for each noisy side.
  std::string verdict = esc(throughput_verdict(a, b));
  while (!verdict.empty() && verdict.back() == '\n') verdict.pop_back();
  for (auto at = verdict.find('\n'); at != std::string::npos; at = verdict.find('\n', at))
    verdict.replace(at, 1, "<br>");
  out += "<p class=\"verdict\">" + verdict + " (A: before, B: after)</p>\n";
  out += comparison_table(a, b);
  out += changes_table<SettingChange>(
      "settings-diff", "Settings that differ",
      "No setting differs in the two configurations' recorded settings.",
      a.config_hash == b.config_hash ? std::vector<SettingChange>{} : setting_differences(a, b),
      setting_key);
  const EnvironmentComparison env = compare_environments(a.runs, b.runs);
  out += changes_table<EnvironmentChange>(
      "environment-diff", "Environment that differs",
      fmt::format("The same in every one of the {} recorded fields.", env.compared.size()),
      env.changes, environment_fact);
  return out + "</section>\n";
}

}  // namespace orch
