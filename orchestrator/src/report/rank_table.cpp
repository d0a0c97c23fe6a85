// Console ranking tables. Speed-up is relative to the slowest configuration, the way the
// article reports "before -> after".
#include "report/rank_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "report/halving_status.h"
#include "report/shown_runs.h"
#include "report/sweep_choice.h"
#include "result/core_metrics.h"
#include "text/terminal_text.h"

namespace orch {
namespace {

// A whole number with a suffix, or "-" when the value was not recorded.
std::string or_dash(const std::optional<double>& v, const char* suffix) {
  return v ? fmt::format("{:.0f}{}", *v, suffix) : std::string("-");
}

// A fixed-width table: columns left- or right-aligned, widths from the widest cell.
struct Table {
  std::vector<std::string> header;
  std::vector<bool> left;
  std::vector<std::vector<std::string>> rows;

  std::string render() const {
    std::vector<std::size_t> w(header.size());
    for (std::size_t c = 0; c < header.size(); ++c) {
      w[c] = header[c].size();
      for (const auto& r : rows) w[c] = std::max(w[c], r[c].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
      std::string out;
      for (std::size_t c = 0; c < cells.size(); ++c) {
        if (c) out += "  ";
        out +=
            left[c] ? fmt::format("{:<{}}", cells[c], w[c]) : fmt::format("{:>{}}", cells[c], w[c]);
      }
      while (!out.empty() && out.back() == ' ') out.pop_back();
      return out + "\n";
    };
    std::string out = line(header);
    for (const auto& r : rows) out += line(r);
    return out;
  }
};

// The diverged runs, each with its reason, ranked or not: a diverged run never disappears
// silently. Long lists stop at kShown lines (the `failures` view has them all).
std::string diverged_lines(const Ranking& ranking) {
  if (ranking.diverged.empty()) return "";
  constexpr std::size_t kShown = 10;
  const std::size_t n = ranking.diverged.size();
  std::string out =
      ranking.diverged_ranked > 0
          ? fmt::format(
                "{} diverged run(s) (loss NaN or infinite), {} of them ranked and marked "
                "DIVERGED above:\n",
                n, ranking.diverged_ranked)
          : fmt::format(
                "{} diverged run(s) (loss NaN or infinite) are not ranked; "
                "`orch rank --include-diverged` ranks them:\n",
                n);
  for (std::size_t i = 0; i < n && i < kShown; ++i) {
    const DivergedRun& d = ranking.diverged[i];
    std::string why = d.error.empty() ? "no reason recorded" : d.error;
    if (auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
    if (why.size() > 160) why = why.substr(0, 157) + "...";
    out +=
        fmt::format("  {} (repeat {}): {}\n", terminal_text(d.name), d.repeat, terminal_text(why));
  }
  if (n > kShown) out += fmt::format("  ... and {} more: see the `failures` view\n", n - kShown);
  return out;
}

// The sweep, and what the table ranks by and how.
std::string rank_heading(const MetricInfo& m, const storage::SweepInfo& sweep) {
  std::string out = describe_sweep(sweep) + "\n";
  out += fmt::format(
      "ranked by {} ({}, {} is better): mean ± 95% confidence interval over repeats\n\n", m.name,
      display_unit(m.unit).empty() ? "number" : display_unit(m.unit),
      m.better == Better::kHigher ? "higher" : "lower");
  return out;
}

// What stands in for the table when no configuration has a ranked run.
std::string no_rows_lines(const Ranking& ranking) {
  std::string out = "no successful runs with " + ranking.metric.name + " in this sweep\n";
  if (ranking.unranked > 0) {
    out +=
        fmt::format("{} configuration(s) have runs but none succeeded: see the `failures` view\n",
                    ranking.unranked);
  }
  return out;
}

// The columns that appear only where some configuration has their numbers, so the table of a
// sweep without them is exactly what it always was.
struct OptionalColumns {
  bool host = false;      ///< the host's CPU beside the GPU's numbers, where it was sampled
  bool profiled = false;  ///< the profile's, where a configuration was profiled
};

OptionalColumns optional_columns(const Ranking& ranking) {
  OptionalColumns cols;
  cols.profiled = std::any_of(ranking.rows.begin(), ranking.rows.end(),
                              [](const RankedConfig& c) { return c.kernels_per_step.has_value(); });
  cols.host = std::any_of(ranking.rows.begin(), ranking.rows.end(),
                          [](const RankedConfig& c) { return c.host_cpu_pct.has_value(); });
  return cols;
}

// The optional columns go before the diagnosis, which they support.
Table rank_table_columns(const MetricInfo& m, OptionalColumns cols) {
  const std::string unit = display_unit(m.unit);
  Table t;
  t.header = {"rank",
              "configuration",
              unit.empty() ? m.name : m.name + " (" + unit + ")",
              "vs #1",
              "n",
              "speedup",
              "data wait / compute ms",
              "peak mem GiB",
              "GPU util",
              "power W",
              "diagnosis"};
  t.left = {false, true, false, true, false, false, false, false, false, false, true};
  if (cols.host) {
    t.header.insert(t.header.end() - 1, "host CPU all / core");
    t.left.insert(t.left.end() - 1, false);
  }
  if (cols.profiled) {
    t.header.insert(t.header.end() - 1, {"kernels/step", "busy (trace)"});
    t.left.insert(t.left.end() - 1, {false, false});
  }
  return t;
}

std::vector<std::string> rank_row(const RankedConfig& c, const MetricInfo& m,
                                  OptionalColumns cols) {
  std::string value = format_metric_value(c.stats.mean, m.unit);
  if (c.stats.ci95_half) value += " ± " + format_metric_value(*c.stats.ci95_half, m.unit);
  std::string split = "-";
  if (c.data_wait_ms && c.compute_ms)
    split = fmt::format("{:.2f} / {:.2f}", *c.data_wait_ms, *c.compute_ms);
  std::vector<std::string> row = {
      std::to_string(c.position),
      terminal_text(configuration_label(c)),
      value,
      c.tie ? "tie" : "",
      std::to_string(c.stats.n),
      std::isnan(c.speedup) ? "-"
                            : fmt::format("{:.2f}x{}", c.speedup, c.baseline ? " (baseline)" : ""),
      split,
      c.peak_bytes ? fmt::format("{:.2f}", *c.peak_bytes / (1024.0 * 1024.0 * 1024.0)) : "-",
      or_dash(c.gpu_util_pct, "%"),
      or_dash(c.power_w, ""),
      terminal_text(diagnosis_column(c))};
  if (cols.host) row.insert(row.end() - 1, host_cpu_cell(c));
  if (cols.profiled) {
    row.insert(row.end() - 1, {or_dash(c.kernels_per_step, ""), or_dash(c.trace_busy_pct, "%")});
  }
  return row;
}

// How many configurations and runs the table stands for.
std::string counts_line(const Ranking& ranking) {
  const std::string with_diverged =
      ranking.diverged_ranked > 0 ? fmt::format(" and {} diverged", ranking.diverged_ranked) : "";
  if (ranking.rows.size() < ranking.configurations) {
    return fmt::format("top {} of {} configurations shown ({} successful runs{})\n",
                       ranking.rows.size(), ranking.configurations, ranking.ok_runs, with_diverged);
  }
  return fmt::format("{} configurations from {} successful runs{}\n", ranking.configurations,
                     ranking.ok_runs, with_diverged);
}

bool any_row(const Ranking& ranking, bool (*has)(const RankedConfig&)) {
  return std::any_of(ranking.rows.begin(), ranking.rows.end(), has);
}

// A footnote for each mark or column the table uses, and only for those.
std::string footnotes(const Ranking& ranking, OptionalColumns cols) {
  std::string out = speedup_note(ranking) + "\n";
  if (any_row(ranking, [](const RankedConfig& c) { return c.tie; }))
    out += "tie: its 95% interval overlaps #1's, so the difference is not significant at this n\n";
  if (any_row(ranking, [](const RankedConfig& c) { return !c.stats.ci95_half.has_value(); }))
    out +=
        "n=1: a single run has no confidence interval (and cannot tie); set `repeat: 3` for one\n";
  if (any_row(ranking, [](const RankedConfig& c) { return c.noisy; })) out += noisy_note() + "\n";
  if (cols.profiled) {
    out +=
        "kernels/step, busy (trace): LibTorch's profiler over extra steps after the measured ones "
        "(profile.steps); 0 kernels: a CPU run; '-': not profiled\n";
  }
  if (any_row(ranking, [](const RankedConfig& c) { return c.shared_gpu_runs > 0; })) {
    out +=
        "SHARED GPU: another process was computing on the GPU when the run started (its pid "
        "and name: the run's environment, gpu_other_processes); its numbers are likely low\n";
  }
  if (ranking.unranked > 0) {
    out += fmt::format(
        "{} configuration(s) with no successful run are not ranked: see the `failures` view\n",
        ranking.unranked);
  }
  return out;
}

}  // namespace

std::string format_rank_table(const Ranking& ranking, const storage::SweepInfo& sweep) {
  std::string out = rank_heading(ranking.metric, sweep);
  if (ranking.rows.empty()) return out + no_rows_lines(ranking) + diverged_lines(ranking);
  const OptionalColumns cols = optional_columns(ranking);
  Table t = rank_table_columns(ranking.metric, cols);
  for (const auto& c : ranking.rows) t.rows.push_back(rank_row(c, ranking.metric, cols));
  out += t.render();
  out += "\n";
  out += counts_line(ranking);
  out += footnotes(ranking, cols);
  return out + diverged_lines(ranking);
}

std::string format_sweep_ranking(const storage::Store& store, std::int64_t sweep_id) {
  const auto sweep = store.sweep(sweep_id);
  if (!sweep) return "no such sweep\n";
  const ShownRuns shown = shown_runs(store, *sweep);
  return format_rank_table(rank_runs(shown.runs, require_metric(metric_key::kImagesPerS), 0,
                                     Diverged::leave_out, shown.baseline),
                           *sweep) +
         format_halving(halving_status(shown)) + (shown.note.empty() ? "" : shown.note + "\n");
}

}  // namespace orch
