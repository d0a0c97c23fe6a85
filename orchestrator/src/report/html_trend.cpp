// The across-sweeps section (see html_trend.h).
#include "report/html_trend.h"

#include <fmt/format.h>

#include "report/html_escape.h"
#include "report/svg_axis.h"
#include "report/svg_point_chart.h"

namespace orch {

std::string trend_section(const ReportData& d) {
  if (d.trends.empty()) return {};
  std::string out = "<section id=\"trend\"><h2>Across sweeps</h2>\n";
  out += fmt::format(
      "<p class=\"note\">Configurations of this sweep that earlier sweeps in this database also "
      "measured (the same configuration hash), one point per sweep in the order the sweeps were "
      "created, up to <code>{}</code>. Points: mean throughput of the sweep's successful runs; "
      "whiskers: the 95% confidence interval where the sweep ran two or more.</p>\n",
      html_escape(d.sweep.name));
  for (const auto& t : d.trends) {
    PointChart chart;
    chart.aria = "throughput of " + t.name + " across sweeps";
    chart.x_title = "sweep (by creation time)";
    chart.y_title = "throughput (img/s)";
    chart.highlight_name = "this sweep";
    for (std::size_t k = 0; k < t.points.size(); ++k) {
      const TrendPoint& p = t.points[k];
      ChartPoint pt;
      pt.x = static_cast<double>(k);
      pt.y = p.stats.mean;
      if (p.stats.ci95_half) {
        pt.lower = p.stats.lower();
        pt.upper = p.stats.upper();
      }
      pt.highlight = p.sweep == d.sweep.name;
      pt.note =
          fmt::format("{} ({}): {} img/s", p.sweep, p.created_at, format_grouped(p.stats.mean, 1));
      if (p.stats.ci95_half) pt.note += " ± " + format_grouped(*p.stats.ci95_half, 1);
      pt.note += fmt::format(", {} run(s)", p.stats.n);
      if (!p.driver_version.empty()) pt.note += ", driver " + p.driver_version;
      if (!p.cudnn_version.empty()) pt.note += ", cuDNN " + p.cudnn_version;
      chart.points.push_back(std::move(pt));
      chart.x_labels.push_back(p.sweep);
    }
    out += fmt::format("<h3>{}</h3>\n<figure>", html_escape(t.name));
    out += svg_point_chart(chart) + "</figure>\n";
  }
  return out + "</section>\n";
}

}  // namespace orch
