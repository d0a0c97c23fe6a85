// Selecting two configurations and comparing them.
#include "report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "report/input_error.h"
#include "report/sweep_diff.h"
#include "result/config_flatten.h"
#include "result/core_metrics.h"
#include "result/json_dump.h"
#include "text/terminal_text.h"

namespace orch {
namespace {

constexpr std::size_t kMinHashPrefix = 4;

bool all_of(const std::string& s, int (*pred)(int)) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [&](unsigned char c) { return pred(c) != 0; });
}

std::string config_list(const std::vector<storage::RunRecord>& runs) {
  std::map<std::string, std::string> configs;  // name -> hash
  for (const auto& r : runs) configs.emplace(r.name, r.config_hash);
  std::string out;
  for (const auto& [name, hash] : configs) {
    out += fmt::format("\n  {}  (hash {})", terminal_text(name), hash.substr(0, 8));
  }
  return out.empty() ? " none" : out;
}

Selection of_config(const std::vector<storage::RunRecord>& runs, const std::string& hash,
                    const std::string& selector) {
  Selection s;
  s.config_hash = hash;
  std::set<std::string> statuses;
  for (const auto& r : runs) {
    if (r.config_hash != hash) continue;
    s.label = r.name;
    statuses.insert(r.status);
    if (r.status == "ok") s.runs.push_back(r);
  }
  if (s.runs.empty()) {
    std::string st;
    for (const auto& x : statuses) st += (st.empty() ? "" : ", ") + x;
    throw InputError(fmt::format("'{}' ({}) has no successful run to compare (its runs: {})",
                                 selector, s.label, st));
  }
  return s;
}

Selection of_run(const storage::RunRecord& r, const std::string& selector) {
  if (r.status != "ok") {
    throw InputError(fmt::format("run {} ({}) did not succeed (status {}); nothing to compare",
                                 r.id, r.name, r.status));
  }
  (void)selector;
  // A run id is read whatever its sweep, so the label says which night it belongs to.
  return Selection{
      fmt::format("run {} ({}, sweep {})", r.id, r.name, r.sweep), r.config_hash, {r}, r.id};
}

std::optional<double> mean(const Selection& s, const std::string& metric) {
  double sum = 0;
  int n = 0;
  for (const auto& r : s.runs) {
    if (auto v = r.metric(metric)) sum += *v, ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

}  // namespace

Selection select_runs(const storage::Store& store,
                      const std::vector<storage::RunRecord>& sweep_runs,
                      const std::string& selector) {
  std::string kind, text = selector;
  for (const char* prefix : {"name:", "run:", "hash:"}) {
    const std::string p(prefix);
    if (selector.rfind(p, 0) == 0)
      kind = p.substr(0, p.size() - 1), text = selector.substr(p.size());
  }
  if (text.empty()) throw InputError("an empty configuration selector");

  std::set<std::string> by_name, by_hash;
  for (const auto& r : sweep_runs) {
    if ((kind.empty() || kind == "name") && r.name == text) by_name.insert(r.config_hash);
    if ((kind.empty() || kind == "hash") && text.size() >= kMinHashPrefix &&
        all_of(text, ::isxdigit) && r.config_hash.rfind(text, 0) == 0) {
      by_hash.insert(r.config_hash);
    }
  }
  std::optional<storage::RunRecord> by_id;
  if ((kind.empty() || kind == "run") && all_of(text, ::isdigit) && text.size() < 19) {
    by_id = store.run(std::stoll(text));
  }
  const std::size_t readings =
      (by_name.empty() ? 0 : 1) + (by_hash.empty() ? 0 : 1) + (by_id ? 1 : 0);
  if (readings == 0) {
    throw InputError(
        fmt::format("'{}' is not a configuration name, run id or hash prefix of this sweep; "
                    "configurations:{}",
                    selector, config_list(sweep_runs)));
  }
  if (readings > 1 || by_hash.size() > 1) {
    std::string what;
    if (!by_name.empty()) what += "\n  name:" + text;
    if (by_id) what += fmt::format("\n  run:{} ({})", by_id->id, by_id->name);
    for (const auto& h : by_hash) {
      auto it = std::find_if(sweep_runs.begin(), sweep_runs.end(),
                             [&](const auto& r) { return r.config_hash == h; });
      what += fmt::format("\n  hash:{} ({})", h, it->name);
    }
    throw InputError(fmt::format("'{}' is ambiguous; it could be:{}", selector, what));
  }
  if (by_id) return of_run(*by_id, selector);
  if (!by_name.empty()) {
    // One name always maps to one configuration in a sweep (names are made unique), but a
    // migrated or hand-edited database might not hold to that.
    if (by_name.size() > 1) {
      std::string what;
      for (const auto& h : by_name) what += "\n  hash:" + h;
      throw InputError(
          fmt::format("'{}' names {} configurations; pick one:{}", selector, by_name.size(), what));
    }
    return of_config(sweep_runs, *by_name.begin(), selector);
  }
  return of_config(sweep_runs, *by_hash.begin(), selector);
}

std::vector<SettingChange> setting_differences(const Selection& a, const Selection& b) {
  std::map<std::string, nlohmann::json> fa, fb;
  if (!a.runs.empty()) flatten_json(a.runs.front().config, "", fa);
  if (!b.runs.empty()) flatten_json(b.runs.front().config, "", fb);
  auto text = [](const std::map<std::string, nlohmann::json>& flat, const std::string& key) {
    auto it = flat.find(key);
    if (it == flat.end()) return std::string("not set");
    return it->second.is_string() ? it->second.get<std::string>() : json_dump(it->second);
  };
  std::set<std::string> keys;
  for (const auto& [k, v] : fa) keys.insert(k);
  for (const auto& [k, v] : fb) keys.insert(k);
  std::vector<SettingChange> out;
  for (const auto& k : keys) {
    const std::string va = text(fa, k), vb = text(fb, k);
    if (va != vb) out.push_back({k, va, vb});
  }
  return out;
}

std::vector<ComparisonLine> comparison_lines(const Selection& a, const Selection& b) {
  auto split = [](const Selection& s) -> std::optional<double> {
    auto step = mean(s, metric_key::kStepMsMean);
    auto wait = mean(s, metric_key::kDataWaitMsMean);
    if (!step || !wait) return std::nullopt;
    return *step - *wait;
  };
  auto gib = [](std::optional<double> v) -> std::optional<double> {
    if (!v) return v;
    return *v / (1024.0 * 1024.0 * 1024.0);
  };
  std::vector<ComparisonLine> lines = {
      {"throughput (img/s)",
       mean(a, metric_key::kImagesPerS),
       mean(b, metric_key::kImagesPerS),
       1,
       {}},
      {"mean GPU utilization (%)",
       mean(a, metric_key::kGpuUtilMeanPct),
       mean(b, metric_key::kGpuUtilMeanPct),
       1,
       {}},
      {"peak memory (GiB)",
       gib(mean(a, metric_key::kPeakAllocatedBytes)),
       gib(mean(b, metric_key::kPeakAllocatedBytes)),
       2,
       {}},
      {"mean power (W)", mean(a, metric_key::kPowerMeanW), mean(b, metric_key::kPowerMeanW), 1, {}},
      {"step time (ms)", mean(a, metric_key::kStepMsMean), mean(b, metric_key::kStepMsMean), 2, {}},
      {"  data wait (ms)",
       mean(a, metric_key::kDataWaitMsMean),
       mean(b, metric_key::kDataWaitMsMean),
       2,
       {}},
      {"  compute (ms)", split(a), split(b), 2, {}},
  };
  // The host's CPU, only where either side sampled it, so comparisons of older runs read as
  // they always did.
  for (const auto& [label, key] :
       {std::pair{"mean host CPU, all cores (%)", metric_key::kHostCpuUtilMeanPct},
        std::pair{"busiest host core (%)", metric_key::kHostCpuBusiestCoreMeanPct}}) {
    auto va = mean(a, key), vb = mean(b, key);
    if (va || vb) lines.push_back({label, va, vb, 1, {}});
  }
  for (auto& l : lines) {
    // A change relative to a value that shows as zero (a data wait of 0.004 ms) is noise.
    const double shown_zero = 0.5 * std::pow(10.0, -l.decimals);
    if (l.a && l.b && std::fabs(*l.a) >= shown_zero) l.change_pct = 100.0 * (*l.b - *l.a) / *l.a;
  }
  return lines;
}

std::string throughput_verdict(const Selection& a, const Selection& b) {
  auto summary = [](const Selection& s) {
    std::vector<double> v;
    for (const auto& r : s.runs) {
      if (auto x = r.metric(metric_key::kImagesPerS)) v.push_back(*x);
    }
    return analysis::summarize(v);
  };
  const analysis::Summary sa = summary(a), sb = summary(b);
  const std::string verdict = judge_change(sa, sb);
  const std::string n = fmt::format("n={} vs {}", sa.n, sb.n);
  std::string out;
  if (verdict == "faster" || verdict == "slower") {
    out =
        fmt::format("throughput: B is {:.1f}% {} than A, significant at 95% (Welch's t-test, {})\n",
                    std::fabs(100.0 * (sb.mean - sa.mean) / sa.mean), verdict, n);
  } else if (verdict == "not enough repeats") {
    out = fmt::format(
        "throughput: inconclusive ({}): a side with one run has no spread to judge the "
        "difference by; set `repeat: 3`\n",
        n);
  } else if (verdict.rfind("inconclusive", 0) == 0) {
    out = fmt::format(
        "throughput: inconclusive ({}): the difference is not significant at 95% (Welch's "
        "t-test), which is not the same as no change\n",
        n);
  }
  for (const auto& [side, s] : {std::pair{"A", &sa}, std::pair{"B", &sb}}) {
    if (!analysis::is_noisy(*s)) continue;
    out += fmt::format(
        "{} is NOISY: its 95% interval is ±{:.0f}% of its mean (more than ±{:.0f}%)\n", side,
        100 * analysis::relative_ci95(*s).value_or(0), 100 * analysis::kNoisyShare);
  }
  return out;
}

std::string format_comparison(const Selection& a, const Selection& b) {
  const std::vector<ComparisonLine> lines = comparison_lines(a, b);
  auto cell = [](const std::optional<double>& v, int decimals) {
    return v ? fmt::format("{:.{}f}", *v, decimals) : std::string("-");
  };
  std::string out =
      fmt::format("A: {} (config {}, {} run{})\nB: {} (config {}, {} run{})\n\n",
                  terminal_text(a.label), a.config_hash.substr(0, 8), a.runs.size(),
                  a.runs.size() == 1 ? "" : "s", terminal_text(b.label), b.config_hash.substr(0, 8),
                  b.runs.size(), b.runs.size() == 1 ? "" : "s");
  if (a.config_hash == b.config_hash) {
    out += "settings: the same configuration\n";
  } else if (const auto settings = setting_differences(a, b); !settings.empty()) {
    out += "settings that differ:\n";
    std::size_t w = 0;
    for (const auto& c : settings) w = std::max(w, c.key.size());
    for (const auto& c : settings) {
      out += fmt::format("  {:<{}}  {} -> {}\n", terminal_text(c.key), w, terminal_text(c.a),
                         terminal_text(c.b));
    }
  }
  const bool runs = a.run_id != 0 && b.run_id != 0;
  out += format_environment_comparison(compare_environments(a.runs, b.runs),
                                       runs ? "runs" : "configurations");
  out += "\n";
  std::size_t w_a = 1, w_b = 1;
  for (const auto& l : lines) {
    w_a = std::max(w_a, cell(l.a, l.decimals).size());
    w_b = std::max(w_b, cell(l.b, l.decimals).size());
  }
  out += fmt::format("{:<24}  {:>{}}  {:>{}}  {:>8}\n", "", "A", w_a, "B", w_b, "change");
  for (const auto& l : lines) {
    const std::string change = l.change_pct ? fmt::format("{:+.1f}%", *l.change_pct) : "-";
    out += fmt::format("{:<24}  {:>{}}  {:>{}}  {:>8}\n", l.label, cell(l.a, l.decimals), w_a,
                       cell(l.b, l.decimals), w_b, change);
  }
  out += "(means over each side's successful runs; change = (B - A) / A)\n";
  return out + throughput_verdict(a, b);
}

}  // namespace orch
