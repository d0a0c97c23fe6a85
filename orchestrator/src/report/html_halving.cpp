// The successive-halving section (see html_halving.h).
#include "report/html_halving.h"

#include <fmt/format.h>

#include "report/html_escape.h"
#include "report/svg_axis.h"

namespace orch {

std::string halving_section(const ReportData& d) {
  const HalvingStatus& h = d.halving;
  if (!h.halving || h.rungs.empty()) return {};
  std::string out = "<section id=\"halving\"><h2>Successive halving</h2>\n";
  out += fmt::format(
      "<p class=\"note\">Every configuration was measured briefly, and each rung kept the best "
      "1/{} by mean throughput (with ties) for a longer measurement; the ranking above is the "
      "last rung's full measurement. A pruned configuration's number is its shorter "
      "measurement, not comparable with the ranking.</p>\n",
      h.eta);
  out +=
      "<table><thead><tr><th>rung</th><th>configurations measured</th><th>steps</th>"
      "<th>repeats</th><th>pruned</th><th>failed</th></tr></thead><tbody>\n";
  for (const RungStatus& r : h.rungs) {
    const bool reached = r.measured + r.failed > 0;
    const std::string steps = !reached ? "-"
                              : r.steps_min == r.steps_max
                                  ? std::to_string(r.steps_max)
                                  : fmt::format("{}-{}", r.steps_min, r.steps_max);
    out += fmt::format(
        "<tr><td>{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
        r.index, r.last ? " (full)" : "",
        reached ? std::to_string(r.measured) : fmt::format("not reached ({} planned)", r.planned),
        steps, r.repeats, r.last ? "-" : std::to_string(r.pruned), r.failed);
  }
  out += "</tbody></table>\n";
  if (h.pruned.empty()) return out + "</section>\n";
  out +=
      "<table><thead><tr><th>configuration</th><th>pruned at rung</th>"
      "<th>throughput (img/s)</th><th>measured steps</th></tr></thead><tbody>\n";
  for (const PrunedConfig& p : h.pruned) {
    out += fmt::format(
        "<tr><td class=\"name\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td></tr>\n",
        html_escape(p.name), p.rung, format_grouped(p.images_per_s, 1), p.steps);
  }
  return out + "</tbody></table></section>\n";
}

}  // namespace orch
