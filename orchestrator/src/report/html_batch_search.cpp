// The batch-size search section (see html_batch_search.h).
#include "report/html_batch_search.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/html_escape.h"
#include "report/svg_axis.h"
#include "report/svg_point_chart.h"

namespace orch {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string outcome_text(const std::string& outcome) {
  if (outcome == "ok") return "fits";
  if (outcome == "oom") return "out of memory";
  if (outcome == "over_headroom") return "over the memory headroom";
  if (outcome == "failed") return "failed (counted as not fitting)";
  return outcome;
}

std::string curve_html(const ProbeCurve& c) {
  PointChart chart;
  chart.aria = "throughput by batch size, batch-size search of " + c.name;
  chart.x_title = "batch size";
  chart.y_title = "throughput (img/s)";
  chart.highlight_name = "chosen";
  chart.cross_name = "did not qualify";
  std::vector<ProbePoint> sorted = c.probes;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const ProbePoint& a, const ProbePoint& b) { return a.batch < b.batch; });
  for (const auto& p : sorted) {
    ChartPoint pt;
    pt.x = static_cast<double>(p.batch);
    // Only a batch that qualified is drawn on the curve: a crossed one could not be chosen.
    if (p.outcome == "ok" && p.images_per_s) pt.y = *p.images_per_s;
    pt.highlight = c.chosen && *c.chosen == p.batch;
    pt.note = fmt::format("batch {}: {}", p.batch, outcome_text(p.outcome));
    if (p.images_per_s) pt.note += ", " + format_grouped(*p.images_per_s, 1) + " img/s";
    if (p.peak_memory_bytes)
      pt.note += fmt::format(", peak {:.2f} GiB", static_cast<double>(*p.peak_memory_bytes) / kGiB);
    chart.points.push_back(std::move(pt));
  }
  std::string out = fmt::format("<h3>{} (repeat {})</h3>\n<p>", html_escape(c.name), c.repeat);
  out += c.mode == "largest" ? "Search <code>auto-largest</code>: the largest batch that fits."
                             : "Search <code>auto</code>: the fastest batch.";
  if (c.chosen) out += fmt::format(" Chosen: <strong>{}</strong>.", *c.chosen);
  if (c.search_s) out += fmt::format(" The search took {:.1f} s.", *c.search_s);
  if (c.headroom)
    out += fmt::format(" Memory headroom: {:.0f}% of the device.", 100.0 * *c.headroom);
  out += "</p>\n<figure>" + svg_point_chart(chart) + "</figure>\n";
  out +=
      "<table class=\"probes\"><thead><tr><th>#</th><th>batch</th><th>img/s</th>"
      "<th>peak memory (GiB)</th><th>outcome</th></tr></thead><tbody>\n";
  for (std::size_t k = 0; k < c.probes.size(); ++k) {
    const ProbePoint& p = c.probes[k];
    out += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       c.chosen && *c.chosen == p.batch ? " class=\"chosen\"" : "", k + 1, p.batch,
                       p.images_per_s ? format_grouped(*p.images_per_s, 1) : "-",
                       p.peak_memory_bytes
                           ? fmt::format("{:.2f}", static_cast<double>(*p.peak_memory_bytes) / kGiB)
                           : "-",
                       html_escape(outcome_text(p.outcome)));
  }
  return out + "</tbody></table>\n";
}

}  // namespace

std::string batch_search_section(const ReportData& d) {
  if (d.probe_curves.empty()) return {};
  std::string out = "<section id=\"batch-search\"><h2>Batch-size search</h2>\n";
  out +=
      "<p class=\"note\">Each probe is a short run in a process of its own: a few warm-up steps "
      "(a CUDA graph captured when the configuration captures one), then up to 10 timed "
      "steps. Probes are listed in the order they ran.</p>\n";
  for (const auto& c : d.probe_curves) out += curve_html(c);
  return out + "</section>\n";
}

}  // namespace orch
