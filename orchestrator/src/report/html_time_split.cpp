// The time-split section (see html_time_split.h): a stacked bar and its table.
#include "report/html_time_split.h"

#include <fmt/format.h>

#include "report/html_escape.h"
#include "report/plan_estimate.h"
#include "report/svg_axis.h"
#include "result/run_phases.h"

namespace orch {
namespace {

// Measured steps in the strong colour, the rest in muted ones: the eye should land on the
// share that counts. Indexed by position in phase_shares()'s order after "measured".
constexpr const char* kMeasured = "#2e7d32";
constexpr const char* kOthers[] = {"#f0b37e", "#4a78a8", "#a4b8cf", "#c9a0dc",
                                   "#d9c27a", "#8fb9a8", "#d98c8c", "#bdbdbd"};

std::string phase_meaning(const std::string& label) {
  if (label == "measured") return "the measured steps: what the ranking is made of";
  if (label == "warm-up") return "warm-up steps (cuDNN autotuning, CUDA graph capture, caches)";
  if (label == "start-up") return "process start, CUDA context and plugin loading";
  if (label == "set-up") return "model and data built and moved to the device";
  if (label == "after the steps") return "results read back, profiled steps, telemetry stopped";
  if (label == "exit") return "the run's document written, the device freed, the process exit";
  if (label == "batch search") return "batch_size: auto's probe runs";
  if (label == "failed runs") return "runs that measured nothing (failed, timed out, stopped)";
  return "the scheduler, recording, device checks and idle slots";
}

std::string stacked_bar(const std::vector<PhaseShare>& shares) {
  constexpr double kWidth = 900, kHeight = 34;
  std::string svg = fmt::format(
      "<svg class=\"chart\" role=\"img\" aria-label=\"share of the sweep's time per phase\" "
      "viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\">\n",
      svg_num(kWidth), svg_num(kHeight));
  double x = 0;
  std::size_t other = 0;
  for (const PhaseShare& s : shares) {
    const char* fill =
        s.label == "measured" ? kMeasured : kOthers[other++ % (sizeof kOthers / sizeof *kOthers)];
    const double w = s.share * kWidth;
    if (w <= 0) continue;
    svg += fmt::format(
        "<rect x=\"{}\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} {:.1f}%</title>"
        "</rect>\n",
        svg_num(x), svg_num(w), svg_num(kHeight), fill, html_escape(s.label), 100 * s.share);
    if (w >= 70) {  // a label only where it fits
      svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\"{}>{} {:.0f}%</text>\n",
                         svg_num(x + w / 2), svg_num(kHeight / 2 + 4),
                         s.label == "measured" ? " style=\"fill:#fff;font-weight:600\"" : "",
                         html_escape(s.label), 100 * s.share);
    }
    x += w;
  }
  return svg + "</svg>\n";
}

}  // namespace

std::string time_split_section(const ReportData& d) {
  std::string out = "<section id=\"time\"><h2>Where the sweep's time went</h2>\n";
  const auto shares = d.time ? phase_shares(d.time->phases, d.time->unmeasured_s, d.time->slot_s)
                             : std::vector<PhaseShare>{};
  if (shares.empty()) {
    return out +
           "<p class=\"note\">This sweep recorded no invocation of <code>orch sweep</code> (runs "
           "from <code>orch run</code> or Slurm, or a database older than schema 6), so its "
           "time split is unknown.</p></section>\n";
  }
  const storage::SweepTimeTotal& t = *d.time;
  out += fmt::format(
      "<p><b>{:.0f}%</b> of the sweep's time was measured steps: {} of measurement in {} of "
      "wall time{}, over {} run{} in {} invocation{} of <code>orch sweep</code>.</p>\n",
      100 * shares.front().share, duration_text(t.phases.measure_s), duration_text(t.wall_s),
      t.slot_s > 1.01 * t.wall_s
          ? fmt::format(" ({} of GPU time: the wall time times the GPUs)", duration_text(t.slot_s))
          : std::string(),
      t.runs, t.runs == 1 ? "" : "s", t.invocations, t.invocations == 1 ? "" : "s");
  out += stacked_bar(shares);
  out +=
      "<table><thead><tr><th>phase</th><th class=\"num\">time</th><th class=\"num\">share</th>"
      "<th>what it is</th></tr></thead><tbody>\n";
  for (const PhaseShare& s : shares) {
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1f}%</td><td>{}</td></tr>\n",
        html_escape(s.label), duration_text(s.seconds), 100 * s.share,
        html_escape(phase_meaning(s.label)));
  }
  out += "</tbody></table>\n";
  out +=
      "<p class=\"note\">Shares of the wall time times the GPU slots. Under "
      "<code>isolation: process</code> start-up and cuDNN's autotuning are paid again by every "
      "run; a warm worker (<code>isolation: worker</code>, the default) pays them once per GPU "
      "and shape, and <code>steps.warmup: auto</code> stops warming up once the steps are "
      "steady (docs/experiment-file.md).</p>\n";
  return out + "</section>\n";
}

}  // namespace orch
