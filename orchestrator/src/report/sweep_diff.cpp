// Night against night (see sweep_diff.h).
#include "report/sweep_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "report/input_error.h"
#include "result/core_metrics.h"
#include "text/terminal_text.h"

namespace orch {
namespace {

using storage::RunRecord;

struct Side {
  std::string name;
  std::vector<double> ips;
};

std::map<std::string, Side> by_hash(const std::vector<RunRecord>& runs) {
  std::map<std::string, Side> out;
  for (const auto& r : runs) {
    Side& s = out[r.config_hash];
    if (s.name.empty()) s.name = r.name;
    const auto v = r.metric(metric_key::kImagesPerS);
    if (r.status == "ok" && v) s.ips.push_back(*v);
  }
  return out;
}

std::string fmt_side(const analysis::Summary& s) {
  if (s.n == 0) return "-";
  std::string out = fmt::format("{:.1f}", s.mean);
  if (s.ci95_half) out += fmt::format(" ± {:.1f}", *s.ci95_half);
  return out;
}

}  // namespace

std::string judge_change(const analysis::Summary& a, const analysis::Summary& b) {
  if (a.n == 0 || b.n == 0) return "no successful run";
  const auto test = analysis::welch_test_95(a, b);
  if (!test) return "not enough repeats";
  if (test->significant) return b.mean > a.mean ? "faster" : "slower";
  return a.n == b.n ? fmt::format("inconclusive (n={})", a.n)
                    : fmt::format("inconclusive (n={} vs {})", a.n, b.n);
}

std::string noisy_sides(const analysis::Summary& a, const analysis::Summary& b) {
  std::string out;
  for (const auto& [side, s] : {std::pair{"A", &a}, std::pair{"B", &b}}) {
    if (!analysis::is_noisy(*s)) continue;
    out += fmt::format("{}{} NOISY (±{:.0f}%)", out.empty() ? "" : ", ", side,
                       100 * analysis::relative_ci95(*s).value_or(0));
  }
  return out;
}

SweepDiff diff_sweeps(const std::vector<RunRecord>& a, const std::vector<RunRecord>& b) {
  SweepDiff d;
  d.environment = compare_environments(a, b);
  const auto sa = by_hash(a), sb = by_hash(b);
  for (const auto& [hash, side_b] : sb) {
    auto it = sa.find(hash);
    if (it == sa.end()) {
      d.only_b.push_back(side_b.name);
      continue;
    }
    ConfigChange c;
    c.name = side_b.name;
    c.config_hash = hash;
    c.a = analysis::summarize(it->second.ips);
    c.b = analysis::summarize(side_b.ips);
    if (c.a.n > 0 && c.b.n > 0 && c.a.mean != 0) {
      c.change_pct = 100.0 * (c.b.mean - c.a.mean) / c.a.mean;
    }
    c.test = analysis::welch_test_95(c.a, c.b);
    c.verdict = judge_change(c.a, c.b);
    c.noisy_a = analysis::is_noisy(c.a);
    c.noisy_b = analysis::is_noisy(c.b);
    d.configs.push_back(std::move(c));
  }
  for (const auto& [hash, side_a] : sa) {
    if (!sb.count(hash)) d.only_a.push_back(side_a.name);
  }
  std::sort(d.configs.begin(), d.configs.end(),
            [](const auto& x, const auto& y) { return x.name < y.name; });
  std::sort(d.only_a.begin(), d.only_a.end());
  std::sort(d.only_b.begin(), d.only_b.end());
  return d;
}

double parse_fail_on(const std::string& text) {
  const std::string allowed =
      "allowed: slower, or slower=PCT with PCT from 0 to 100, e.g. slower=5";
  const std::string head = "slower";
  if (text == head) return 0;
  if (text.rfind(head + "=", 0) != 0) {
    throw InputError("--fail-on '" + text + "' is not a condition orch knows (" + allowed + ")");
  }
  std::string number = text.substr(head.size() + 1);
  if (!number.empty() && number.back() == '%') number.pop_back();
  char* end = nullptr;
  errno = 0;
  const double pct = number.empty() ? NAN : std::strtod(number.c_str(), &end);
  if (number.empty() || errno != 0 || *end != '\0' || !std::isfinite(pct) || pct < 0 || pct > 100) {
    throw InputError("--fail-on '" + text + "': '" + number + "' is not a percentage (" + allowed +
                     ")");
  }
  return pct;
}

std::vector<ConfigChange> slower_than(const SweepDiff& diff, double pct) {
  std::vector<ConfigChange> out;
  for (const auto& c : diff.configs) {
    if (c.verdict == "slower" && c.change_pct && -*c.change_pct > pct) out.push_back(c);
  }
  return out;
}

std::string format_gate(const SweepDiff& diff, const std::vector<ConfigChange>& slower,
                        double pct) {
  const std::string by = pct > 0 ? fmt::format(" by more than {:g}%", pct) : std::string();
  std::size_t unjudged = 0;
  for (const auto& c : diff.configs) {
    if (c.verdict != "faster" && c.verdict != "slower") ++unjudged;
  }
  if (slower.empty()) {
    std::string out =
        fmt::format("gate passed: no configuration significantly slower in B{} ({} compared", by,
                    diff.configs.size());
    if (unjudged > 0) {
      out += fmt::format(
          "; {} could not be judged (inconclusive, not enough repeats or no successful run) and "
          "pass unjudged",
          unjudged);
    }
    return out + ")\n";
  }
  std::string out =
      fmt::format("FAIL: {} configuration(s) significantly slower in B{}:\n", slower.size(), by);
  for (const auto& c : slower) {
    out += fmt::format("  {}  {:+.1f}% ({:.1f} -> {:.1f} img/s)\n", terminal_text(c.name),
                       *c.change_pct, c.a.mean, c.b.mean);
  }
  return out;
}

std::string format_sweep_diff(const SweepDiff& d, const std::string& a_name,
                              const std::string& b_name) {
  std::string out = fmt::format("sweep {} (A) against sweep {} (B): throughput (img/s)\n\n",
                                terminal_text(a_name), terminal_text(b_name));
  out += format_environment_comparison(d.environment, "sweeps") + "\n";
  if (d.configs.empty()) {
    out += "no configuration ran in both sweeps (configurations are paired by hash)\n";
  } else {
    bool any_noisy = false;
    std::vector<std::vector<std::string>> rows = {
        {"configuration", "A img/s", "n", "B img/s", "n", "change", "verdict"}};
    for (const auto& c : d.configs) {
      const std::string noisy = noisy_sides(c.a, c.b);
      rows.push_back({terminal_text(c.name), fmt_side(c.a), std::to_string(c.a.n), fmt_side(c.b),
                      std::to_string(c.b.n),
                      c.change_pct ? fmt::format("{:+.1f}%", *c.change_pct) : "-",
                      noisy.empty() ? c.verdict : c.verdict + "; " + noisy});
      any_noisy = any_noisy || !noisy.empty();
    }
    std::vector<std::size_t> width(rows[0].size(), 0);
    for (const auto& r : rows) {
      for (std::size_t j = 0; j < r.size(); ++j) width[j] = std::max(width[j], r[j].size());
    }
    for (const auto& r : rows) {
      std::string line;
      for (std::size_t j = 0; j < r.size(); ++j) {
        const bool left = j == 0 || j == r.size() - 1;
        line += (j ? "  " : "") + (left ? fmt::format("{:<{}}", r[j], width[j])
                                        : fmt::format("{:>{}}", r[j], width[j]));
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    out +=
        "\nverdict: Welch's t-test on the repeats' throughput, two-sided at 95% "
        "(faster/slower: the difference is significant; inconclusive: it is not at this n, "
        "which is not the same as no change: more repeats may show one); "
        "not enough repeats: a side has fewer than 2 successful runs (set `repeat: 3`)\n";
    if (any_noisy) {
      out += fmt::format(
          "NOISY: that side's 95% interval reaches further than ±{:.0f}% of its mean; its "
          "repeats disagree too much for a smaller change to show\n",
          100 * analysis::kNoisyShare);
    }
  }
  if (!d.only_a.empty() || !d.only_b.empty()) {
    auto list = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
      return s;
    };
    out += "\n";
    if (!d.only_a.empty()) out += "only in A (not compared): " + list(d.only_a) + "\n";
    if (!d.only_b.empty()) out += "only in B (not compared): " + list(d.only_b) + "\n";
  }
  return out;
}

}  // namespace orch
