// `orch compare --sweeps A B`: night against night. Configurations are paired by hash across
// the two sweeps, and each is judged faster, slower or inconclusive by Welch's t-test on its
// repeats' throughput at 95%; what changed in the environment (every field the runs recorded:
// versions, host, CPU, torch threads, variables, ...) is listed first, since it is usually why.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/statistics.h"
#include "analysis/welch.h"
#include "report/environment_diff.h"
#include "storage/store.h"

namespace orch {

struct ConfigChange {
  std::string name, config_hash;     ///< the name in B
  analysis::Summary a, b;            ///< throughput (img/s) over the successful runs
  std::optional<double> change_pct;  ///< (b - a) / a in percent
  std::optional<analysis::WelchResult> test;
  /// faster, slower, inconclusive (n=3), not enough repeats, no successful run (judge_change)
  std::string verdict;
  bool noisy_a = false, noisy_b = false;  ///< analysis::is_noisy of each side
};

struct SweepDiff {
  EnvironmentComparison environment;
  std::vector<ConfigChange> configs;        ///< in B's order by name
  std::vector<std::string> only_a, only_b;  ///< configuration names in one sweep only
};

/// B against A by Welch's t-test at 95%: "faster" or "slower" when the difference is
/// significant; "inconclusive (n=3)" ("(n=3 vs 2)" when the sides' counts differ) when it is
/// not, which is not "no change": more repeats might show one; "not enough repeats" when a side
/// has one run, "no successful run" when a side has none.
std::string judge_change(const analysis::Summary& a, const analysis::Summary& b);

/// "A NOISY (±14%)", "A NOISY (±14%), B NOISY (±12%)", or "" when neither side is noisy.
std::string noisy_sides(const analysis::Summary& a, const analysis::Summary& b);

/// `--fail-on slower[=PCT]`: the least slow-down in percent that fails the gate; `slower`
/// alone is 0 (any significant slow-down). PCT is a number from 0 to 100, a trailing `%`
/// allowed. Anything else throws InputError saying what is allowed.
double parse_fail_on(const std::string& text);

/// The configurations judged significantly slower in B (verdict "slower") by more than `pct`
/// percent of A's throughput, in the table's order.
std::vector<ConfigChange> slower_than(const SweepDiff& diff, double pct);

/// The gate's verdict, for cron and CI: "FAIL: ..." with one line per configuration in
/// `slower`, or "gate passed: ..." saying how many configurations it could not judge
/// (inconclusive, not enough repeats, no successful run), which it lets through.
std::string format_gate(const SweepDiff& diff, const std::vector<ConfigChange>& slower, double pct);

/// Pairs the runs of two sweeps (any statuses; only 'ok' runs with a throughput count).
SweepDiff diff_sweeps(const std::vector<storage::RunRecord>& a,
                      const std::vector<storage::RunRecord>& b);

/// The table: environment differences first, then one line per configuration and the rule.
std::string format_sweep_diff(const SweepDiff& diff, const std::string& a_name,
                              const std::string& b_name);

}  // namespace orch
