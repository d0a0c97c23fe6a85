// Rendering the HTML report (see html_report.h). The page is built from small section
// functions; charts come from svg_charts.h, escaping from html_escape.h only.
#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "report/html_batch_search.h"
#include "report/html_before_after.h"
#include "report/html_environment.h"
#include "report/html_escape.h"
#include "report/html_halving.h"
#include "report/html_time_split.h"
#include "report/html_trend.h"
#include "report/svg_axis.h"
#include "report/svg_charts.h"
#include "result/core_metrics.h"

namespace orch {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

constexpr const char* kStyle = R"css(
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", Arial, sans-serif;
       color: #1a1a1a; background: #fff; margin: 20px auto; max-width: 1360px; padding: 0 16px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 30px 0 8px; border-bottom: 2px solid #1f3b5c; padding-bottom: 3px; }
h3 { font-size: 15px; margin: 16px 0 4px; }
p { margin: 6px 0; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 6px 0; }
th, td { border: 1px solid #b8b8b8; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eef1f5; }
td.num, th.num { text-align: right; white-space: nowrap; }
td.name { overflow-wrap: anywhere; max-width: 380px; }
td.indent { padding-left: 24px; }
.note { color: #444; font-size: 13px; }
.finding { border-left: 5px solid #b35900; background: #fff4e5; padding: 6px 10px; margin: 6px 0; }
.finding.error { border-left-color: #a00000; background: #fde8e8; }
.finding .advice { color: #333; font-size: 13px; }
.summary { display: flex; flex-wrap: wrap; gap: 8px 28px; margin: 8px 0; }
.summary div { min-width: 180px; }
.summary b { display: block; font-size: 20px; }
nav a { margin-right: 14px; color: #1f3b5c; }
svg.chart { max-width: 100%; height: auto; font-family: inherit; }
svg.chart text { font-size: 12px; fill: #1a1a1a; }
svg.chart .axis-title { font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 6px 10px; }
.run { border-top: 1px solid #ddd; padding-top: 4px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; background: #f4f4f4;
      padding: 6px; margin: 4px 0; }
td.error { max-width: 640px; overflow-wrap: anywhere; }
tr.chosen td { font-weight: 600; }
.diverged { color: #a00000; font-weight: 600; }
@media print {
  body { margin: 0; max-width: none; }
  nav { display: none; }
  .run, figure, table { break-inside: avoid; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
)css";

std::string esc(const std::string& s) { return html_escape(s); }

std::string or_dash(const std::optional<double>& v, const char* suffix) {
  return v ? fmt::format("{:.0f}{}", *v, suffix) : std::string("-");
}

// The ranking table's cells, formatted exactly as `orch rank` prints them.
struct RankCells {
  std::string value, split, speedup, peak, util, power, kernels, trace_busy;
};

RankCells rank_cells(const RankedConfig& c, const MetricInfo& m) {
  RankCells out;
  out.value = format_metric_value(c.stats.mean, m.unit);
  if (c.stats.ci95_half) out.value += " ± " + format_metric_value(*c.stats.ci95_half, m.unit);
  out.split = c.data_wait_ms && c.compute_ms
                  ? fmt::format("{:.2f} / {:.2f}", *c.data_wait_ms, *c.compute_ms)
                  : "-";
  out.speedup = std::isnan(c.speedup)
                    ? "-"
                    : fmt::format("{:.2f}x{}", c.speedup, c.baseline ? " (baseline)" : "");
  out.peak = c.peak_bytes ? fmt::format("{:.2f}", *c.peak_bytes / kGiB) : "-";
  out.util = or_dash(c.gpu_util_pct, "%");
  out.power = or_dash(c.power_w, "");
  out.kernels = or_dash(c.kernels_per_step, "");
  out.trace_busy = or_dash(c.trace_busy_pct, "%");
  return out;
}

bool any_profile(const ReportData& d) {
  return std::any_of(d.runs.begin(), d.runs.end(),
                     [](const storage::RunRecord& r) { return r.profile.has_value(); });
}

std::string header(const ReportData& d) {
  const auto& s = d.sweep;
  std::map<std::string, int> statuses;
  for (const auto& r : d.runs) ++statuses[r.status];
  std::string counts;
  for (const auto& [st, n] : statuses)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, esc(st));
  std::string out = fmt::format("<header><h1>orch report: sweep {}</h1>\n", esc(s.name));
  out += fmt::format("<p>Experiment <b>{}</b>", esc(s.experiment));
  if (!s.experiment_file.empty())
    out += fmt::format(" from <code>{}</code>", esc(s.experiment_file));
  out += fmt::format(". Sweep created {}, updated {}. Report generated {} by orch {}.</p>\n",
                     esc(s.created_at), esc(s.updated_at), esc(d.generated_at), esc(ORCH_VERSION));
  if (!s.description.empty()) out += fmt::format("<p class=\"note\">{}</p>\n", esc(s.description));
  out += "<div class=\"summary\">";
  out += fmt::format("<div>runs<b>{}</b>{}</div>", d.runs.size(), counts.empty() ? "none" : counts);
  out += fmt::format("<div>configurations ranked<b>{}</b>{} with no successful run</div>",
                     d.ranking.configurations, d.ranking.unranked);
  if (!d.ranking.rows.empty()) {
    const auto& b = d.ranking.rows.front();
    out += fmt::format("<div>fastest<b>{}</b>{} img/s, {} over {}</div>", esc(b.name),
                       esc(rank_cells(b, d.ranking.metric).value),
                       esc(rank_cells(b, d.ranking.metric).speedup),
                       d.ranking.baseline.empty() ? std::string("the slowest")
                                                  : "the baseline, " + esc(d.ranking.baseline));
  }
  out += "</div>\n";
  out +=
      "<nav><a href=\"#ranking\">ranking</a><a href=\"#throughput\">throughput</a>"
      "<a href=\"#step-time\">step time</a><a href=\"#before-after\">before / after</a>"
      "<a href=\"#environment\">environment</a><a href=\"#failures\">failures</a>"
      "<a href=\"#telemetry\">telemetry</a><a href=\"#time\">time</a>";
  if (any_profile(d)) out += "<a href=\"#profiles\">profiles</a>";
  if (!d.trends.empty()) out += "<a href=\"#trend\">across sweeps</a>";
  if (!d.probe_curves.empty()) out += "<a href=\"#batch-search\">batch search</a>";
  out += "</nav></header>\n";
  return out;
}

std::string findings_html(const std::vector<EnvironmentWarning>& warnings) {
  std::string out;
  for (const auto& w : warnings) {
    out += fmt::format(
        "<div class=\"finding {}\"><b>{}</b> <code>{}</code> {} <span class=\"note\">({} "
        "run{})</span>",
        esc(w.severity), esc(w.severity), esc(w.check), esc(w.message), w.runs,
        w.runs == 1 ? "" : "s");
    if (!w.advice.empty()) out += fmt::format("<div class=\"advice\">{}</div>", esc(w.advice));
    out += "</div>\n";
  }
  return out;
}

// The diverged runs below the ranking, each with its reason, as `orch rank` lists them.
std::string diverged_html(const Ranking& rk) {
  if (rk.diverged.empty()) return "";
  std::string out = fmt::format(
      "<p><span class=\"diverged\">{} diverged run(s)</span>: the loss became NaN or infinite, so "
      "{} throughput is not ranked (<code>orch rank --include-diverged</code> ranks it, "
      "marked).</p>\n<ul class=\"diverged-runs\">\n",
      rk.diverged.size(), rk.diverged.size() == 1 ? "its" : "their");
  for (const DivergedRun& r : rk.diverged) {
    out += fmt::format("<li><b>{}</b> (repeat {}): {}</li>\n", esc(r.name), r.repeat,
                       esc(r.error.empty() ? "no reason recorded" : r.error));
  }
  return out + "</ul>\n";
}

std::string ranking_section(const ReportData& d) {
  const Ranking& rk = d.ranking;
  std::string out = "<section id=\"ranking\"><h2>Ranking</h2>\n";
  out +=
      "<p class=\"note\">Configurations ranked by throughput (img/s, higher is better): the mean "
      "over "
      "successful runs ± the half-width of its 95% confidence interval (Student t, n-1 degrees of "
      "freedom), the same numbers as <code>orch rank</code>. Speed-up is over the sweep's slowest "
      "configuration.</p>\n";
  if (rk.rows.empty()) {
    out += "<p>No successful run with a throughput in this sweep.</p>";
    if (rk.unranked > 0)
      out += fmt::format(
          "<p>{} configuration(s) have runs but none succeeded: see <a "
          "href=\"#failures\">failures</a>.</p>",
          rk.unranked);
    return out + diverged_html(rk) + "</section>\n";
  }
  out +=
      "<table class=\"ranking\"><thead><tr><th class=\"num\">rank</th><th>configuration</th>"
      "<th class=\"num\">img/s (mean ± 95% CI)</th><th>vs #1</th><th class=\"num\">n</th>"
      "<th class=\"num\">speed-up</th><th class=\"num\">data wait / compute ms</th>"
      "<th class=\"num\">peak mem GiB</th><th class=\"num\">GPU util</th><th class=\"num\">power "
      "W</th>";
  // As in `orch rank`: the profile's columns only when a configuration was profiled.
  const bool profiled = std::any_of(rk.rows.begin(), rk.rows.end(), [](const RankedConfig& c) {
    return c.kernels_per_step.has_value();
  });
  // The host's CPU beside the GPU's numbers, likewise only where it was sampled.
  const bool host = std::any_of(rk.rows.begin(), rk.rows.end(),
                                [](const RankedConfig& c) { return c.host_cpu_pct.has_value(); });
  if (host) out += "<th class=\"num\">host CPU all / core</th>";
  if (profiled) {
    out += "<th class=\"num\">kernels/step</th><th class=\"num\">busy (trace)</th>";
  }
  out += "<th>diagnosis</th></tr></thead><tbody>\n";
  bool single = false, ties = false;
  for (const auto& c : rk.rows) {
    const RankCells cells = rank_cells(c, rk.metric);
    single = single || !c.stats.ci95_half;
    ties = ties || c.tie;
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"name\">{}</td><td "
        "class=\"num\">{}</td><td>{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td>{}{}<td>{}</td></tr>\n",
        c.position, esc(configuration_label(c)), esc(cells.value), c.tie ? "tie" : "", c.stats.n,
        esc(cells.speedup), esc(cells.split), esc(cells.peak), esc(cells.util), esc(cells.power),
        host ? fmt::format("<td class=\"num\">{}</td>", esc(host_cpu_cell(c))) : std::string(),
        profiled ? fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td>",
                               esc(cells.kernels), esc(cells.trace_busy))
                 : std::string(),
        esc(diagnosis_column(c)));
  }
  out += "</tbody></table>\n";
  out += fmt::format("<p class=\"note\">{} configurations from {} successful runs.",
                     rk.configurations, rk.ok_runs);
  out += " " + esc(speedup_note(rk)) + ".";
  if (ties)
    out += " tie: its 95% interval overlaps #1's, so the difference is not significant at this n.";
  if (single)
    out +=
        " n=1: a single run has no confidence interval (and cannot tie); set <code>repeat: "
        "3</code> for one.";
  if (std::any_of(rk.rows.begin(), rk.rows.end(), [](const RankedConfig& c) { return c.noisy; }))
    out += " " + esc(noisy_note()) + ".";
  if (rk.unranked > 0) {
    out += fmt::format(
        " {} configuration(s) with no successful run are not ranked: see <a "
        "href=\"#failures\">failures</a>.",
        rk.unranked);
  }
  return out + "</p>\n" + diverged_html(rk) + "</section>\n";
}

std::string throughput_section(const ReportData& d) {
  std::string out = "<section id=\"throughput\"><h2>Throughput per configuration</h2>\n";
  if (d.ranking.rows.empty()) return out + "<p>Nothing to chart.</p></section>\n";
  std::vector<BarItem> bars;
  for (const auto& c : d.ranking.rows) {
    BarItem b{c.name, c.stats.mean, {}, {}, format_grouped(c.stats.mean, 1) + " img/s"};
    if (c.stats.ci95_half) {
      b.lower = c.stats.lower();
      b.upper = c.stats.upper();
      b.value_text = format_grouped(c.stats.mean, 1) + " ± " +
                     format_grouped(*c.stats.ci95_half, 1) + " img/s";
    }
    bars.push_back(std::move(b));
  }
  out += "<figure>" + svg_bar_chart(bars, "throughput (img/s)");
  out +=
      "<figcaption class=\"note\">Bars: mean throughput over successful runs. Whiskers: the 95% "
      "confidence "
      "interval (only where a configuration has two or more runs).</figcaption></figure>\n";
  return out + "</section>\n";
}

std::string step_section(const ReportData& d) {
  std::string out = "<section id=\"step-time\"><h2>Step time: data wait and compute</h2>\n";
  std::vector<StackItem> items;
  std::size_t missing = 0;
  for (const auto& c : d.ranking.rows) {
    if (!c.data_wait_ms || !c.compute_ms) {
      ++missing;
      continue;
    }
    items.push_back({c.name, *c.data_wait_ms, *c.compute_ms,
                     fmt::format("{:.2f} ms (data wait {:.2f})", *c.data_wait_ms + *c.compute_ms,
                                 *c.data_wait_ms)});
  }
  if (items.empty())
    return out + "<p>No configuration recorded its step time and data wait.</p></section>\n";
  out += "<figure>" + svg_stacked_bars(items, "data wait (ms)", "compute (ms)",
                                       "mean step time (ms)", "step-split");
  out +=
      "<figcaption class=\"note\">Mean wall time per step, split into the host's wait for the data "
      "loader "
      "and the rest (compute). A large data-wait part means the configuration is input-bound.";
  if (missing > 0)
    out += fmt::format(" {} configuration(s) without a recorded data wait are left out.", missing);
  out += "</figcaption></figure>\n";
  return out + "</section>\n";
}

std::string environment_section(const ReportData& d,
                                const std::vector<EnvironmentWarning>& warnings) {
  std::string out = "<section id=\"environment\"><h2>Environment</h2>\n";
  out += fmt::format(
      "<p class=\"note\">As each run recorded it ({} runs). Where runs differ, every value is "
      "listed with its number of runs.</p>\n",
      d.environments.size());
  out += "<table class=\"environment\"><tbody>\n";
  for (const EnvironmentFact& f : environment_facts(d.environments)) {
    std::string value;
    if (f.values.empty()) value = "not recorded";
    for (const auto& [v, n] : f.values) {
      if (!value.empty()) value += "<br>";
      value += esc(v);
      if (f.values.size() > 1)
        value += fmt::format(" <span class=\"note\">({} run{})</span>", n, n == 1 ? "" : "s");
    }
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", esc(f.label), value);
  }
  out += "</tbody></table>\n<h3>Warnings from the stored environment</h3>\n";
  if (warnings.empty()) {
    out +=
        "<p>None: CUDA_LAUNCH_BLOCKING unset, PCIe link at its maximum and persistence mode on "
        "(where "
        "recorded).</p>\n";
  } else {
    out += findings_html(warnings);
  }
  return out + "</section>\n";
}

std::string failures_section(const ReportData& d) {
  std::string out = "<section id=\"failures\"><h2>Failures</h2>\n";
  if (d.failures.empty()) return out + "<p>Every run of this sweep succeeded.</p></section>\n";
  out +=
      "<table class=\"failures\"><thead><tr><th class=\"num\">run</th><th>configuration</th><th "
      "class=\"num\">repeat</th>"
      "<th>status</th><th "
      "class=\"num\">attempts</th><th>exit</th><th>error</th></tr></thead><tbody>\n";
  for (const FailureRow& f : d.failures) {
    std::string exit = "-";
    if (f.term_signal)
      exit = fmt::format("signal {}", *f.term_signal);
    else if (f.exit_code)
      exit = fmt::format("code {}", *f.exit_code);
    std::string error = esc(f.error.empty() ? "-" : f.error);
    if (!f.stderr_tail.empty()) {
      error += "<details><summary>stderr (tail)</summary><pre>" + esc(f.stderr_tail) +
               "</pre></details>";
    }
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"name\">{}</td><td "
        "class=\"num\">{}</td><td>{}</td>"
        "<td class=\"num\">{}</td><td>{}</td><td class=\"error\">{}</td></tr>\n",
        f.run_id, esc(f.name), f.repeat,
        f.status == "diverged" ? "<span class=\"diverged\">diverged</span>" : esc(f.status),
        f.attempts, exit, error);
  }
  return out + "</tbody></table></section>\n";
}

// The top kernels or host operators of one profiled run.
std::string profile_ops_table(const std::vector<storage::ProfileOp>& ops, bool kernels) {
  std::string out = fmt::format(
      "<table class=\"profile-ops\"><thead><tr><th>{}</th><th class=\"num\">calls</th>"
      "<th class=\"num\">{} ms</th><th class=\"num\">share</th></tr></thead><tbody>\n",
      kernels ? "kernel" : "host operator", kernels ? "total" : "self");
  for (const auto& op : ops) {
    out += fmt::format(
        "<tr><td class=\"name\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2f}</td>"
        "<td class=\"num\">{:.1f}%</td></tr>\n",
        esc(op.name), op.calls, kernels ? op.total_ms : op.self_ms, 100 * op.share);
  }
  return out + "</tbody></table>\n";
}

std::string profile_section(const ReportData& d) {
  if (!any_profile(d)) return {};
  std::string out = "<section id=\"profiles\"><h2>Inside a step: profiles</h2>\n";
  out +=
      "<p class=\"note\">LibTorch's profiler (Kineto) over <code>profile.steps</code> extra steps "
      "after the measured ones, so the throughput above is not perturbed. Kernels per step and the "
      "GPU busy share (the time at least one kernel ran per step, over the measured step time) are "
      "the launch-bound evidence: many short kernels and a low busy share mean the host does not "
      "launch fast enough. The profiler adds host time per operator but not GPU time, so a "
      "launch-bound step is slower profiled: the share over the profiled steps' own time is in "
      "parentheses. Open a trace in <code>chrome://tracing</code> or <a "
      "href=\"https://ui.perfetto.dev\">Perfetto</a>.</p>\n";
  out +=
      "<table class=\"profiles\"><thead><tr><th class=\"num\">run</th><th>configuration</th>"
      "<th class=\"num\">repeat</th><th class=\"num\">steps</th><th class=\"num\">step ms "
      "(profiled)</th><th class=\"num\">kernels/step</th><th class=\"num\">mean kernel us</th>"
      "<th class=\"num\">busy (trace; profiled)</th><th class=\"num\">GPU util (NVML)</th>"
      "<th>diagnosis</th><th>trace</th></tr></thead><tbody>\n";
  std::string details;
  for (const storage::RunRecord& r : d.runs) {
    if (!r.profile) continue;
    const storage::RunProfile& p = *r.profile;
    std::string mean_kernel = "-";
    if (p.kernels_per_step && *p.kernels_per_step > 0 && p.gpu_kernel_ms_per_step) {
      mean_kernel = fmt::format("{:.0f}", 1000 * *p.gpu_kernel_ms_per_step / *p.kernels_per_step);
    }
    std::string kernels = or_dash(p.kernels_per_step, "");
    if (p.kernels_per_step && !p.gpu()) kernels += " (CPU run)";
    std::string busy = "-";
    if (p.gpu_busy_share) busy = fmt::format("{:.0f}%", 100 * *p.gpu_busy_share);
    if (p.gpu_busy_share_profiled)
      busy += fmt::format(" ({:.0f}%)", 100 * *p.gpu_busy_share_profiled);
    std::string trace = p.trace_path.empty() ? "-" : "<code>" + esc(p.trace_path) + "</code>";
    if (!p.error.empty()) trace += " <span class=\"note\">" + esc(p.error) + "</span>";
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"name\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>"
        "<td class=\"name\">{}</td></tr>\n",
        r.id, esc(r.name), r.repeat, p.steps, p.step_ms ? fmt::format("{:.2f}", *p.step_ms) : "-",
        esc(kernels), mean_kernel, busy, or_dash(r.metric(metric_key::kGpuUtilMeanPct), "%"),
        esc(r.diagnosis.empty() ? "-" : r.diagnosis), trace);
    if (p.top_kernels.empty() && p.top_cpu_ops.empty()) continue;
    details +=
        fmt::format("<details><summary>{} (repeat {}, run {}): where the time went</summary>\n",
                    esc(r.name), r.repeat, r.id);
    if (!p.top_kernels.empty()) details += profile_ops_table(p.top_kernels, true);
    if (!p.top_cpu_ops.empty()) details += profile_ops_table(p.top_cpu_ops, false);
    details += "</details>\n";
  }
  out += "</tbody></table>\n" + details;
  return out + "</section>\n";
}

// A run's NVML charts: utilization, power and device memory.
std::string gpu_charts(const RunTimeline& t, double x_max) {
  double mem_max = 0;
  for (const auto& v : t.memory_used_bytes) mem_max = std::max(mem_max, v.value_or(0.0));
  // GiB for a GPU's memory; MiB when it stays under one GiB, so the ticks stay readable.
  const bool gib = mem_max >= kGiB;
  std::vector<std::optional<double>> mem;
  for (const auto& v : t.memory_used_bytes) {
    mem.push_back(v ? std::optional<double>(*v / (gib ? kGiB : 1024.0 * 1024.0)) : std::nullopt);
  }
  std::string out =
      svg_time_series({"GPU utilization (%)", t.t_s, t.gpu_util_pct, 100.0, t.window, x_max});
  out += svg_time_series({"power (W)", t.t_s, t.power_w, std::nullopt, t.window, x_max});
  out += svg_time_series(
      {gib ? "memory used (GiB)" : "memory used (MiB)", t.t_s, mem, std::nullopt, t.window, x_max});
  return out;
}

std::string telemetry_section(const ReportData& d) {
  std::string out = "<section id=\"telemetry\"><h2>GPU telemetry per run</h2>\n";
  out +=
      "<p class=\"note\">NVML samples over the whole run (every sample drawn, joined by straight "
      "lines, no "
      "smoothing: a saw-tooth in utilization or power is the GPU waiting). The shaded band is the "
      "measured steps (<code>telemetry.measure_window_s</code>); before it, set-up and warm-up. "
      "Memory is "
      "NVML's device memory used (every process and the driver's reserve). Where the host was "
      "sampled, its CPU is drawn beside: every core together, and the busiest single core "
      "(<code>host_telemetry</code>).</p>\n";
  std::string without;
  for (const RunTimeline& t : d.timelines) {
    const std::string title = fmt::format("{} <span class=\"note\">(repeat {}, run {}, {})</span>",
                                          esc(t.name), t.repeat, t.run_id, esc(t.status));
    if (t.t_s.empty() && t.host_t_s.empty()) {
      without += "<li>" + title + ": " + esc(t.reason) + "</li>\n";
      continue;
    }
    out += "<div class=\"run\"><h3>" + title + "</h3><div class=\"charts\">";
    double x_max = 0;
    if (!t.t_s.empty()) x_max = t.t_s.back();
    if (!t.host_t_s.empty()) x_max = std::max(x_max, t.host_t_s.back());
    if (!t.t_s.empty()) out += gpu_charts(t, x_max);
    // The host's CPU beside the GPU's utilization: every core together, and the busiest core
    // (a single-threaded loader shows as one core near 100%).
    if (!t.host_t_s.empty()) {
      out += svg_time_series(
          {"host CPU, all cores (%)", t.host_t_s, t.host_cpu_pct, 100.0, t.host_window, x_max});
      out += svg_time_series(
          {"busiest host core (%)", t.host_t_s, t.host_core_pct, 100.0, t.host_window, x_max});
    }
    out += "</div>";
    if (t.t_s.empty()) out += "<p class=\"note\">No GPU samples: " + esc(t.reason) + "</p>";
    out += "</div>\n";
  }
  if (!without.empty()) out += "<h3>Runs without samples</h3><ul>\n" + without + "</ul>\n";
  return out + "</section>\n";
}

}  // namespace

std::string render_html_report(const ReportData& d) {
  const std::vector<EnvironmentWarning> warnings = environment_warnings(d.environments);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<title>orch report: {}</title>\n", esc(d.sweep.name));
  out += std::string("<style>") + kStyle + "</style>\n</head>\n<body>\n";
  out += header(d);
  if (!warnings.empty()) {
    const auto errors = std::count_if(warnings.begin(), warnings.end(),
                                      [](const auto& w) { return w.severity == "error"; });
    out += fmt::format(
        "<p class=\"finding{}\">{} error(s) and {} warning(s) from the runs' stored environment: "
        "see <a href=\"#environment\">environment</a>.</p>\n",
        errors > 0 ? " error" : "", errors, warnings.size() - errors);
  }
  out += ranking_section(d);
  out += halving_section(d);
  out += throughput_section(d);
  out += step_section(d);
  out += before_after_section(d);
  out += trend_section(d);
  out += batch_search_section(d);
  out += environment_section(d, warnings);
  out += failures_section(d);
  out += time_split_section(d);
  out += telemetry_section(d);
  out += profile_section(d);
  out +=
      "<footer class=\"note\"><p>Written by <code>orch report</code>. This file is self-contained: "
      "no "
      "scripts, fonts or images are loaded.</p></footer>\n</body>\n</html>\n";
  return out;
}

std::string html_report(storage::Store& store, const storage::SweepInfo& sweep) {
  return render_html_report(gather_report_data(store, sweep));
}

}  // namespace orch
