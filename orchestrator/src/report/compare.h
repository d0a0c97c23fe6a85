// `orch compare A B`: the article's before/after table for two configurations (or runs) of a
// sweep: throughput, GPU utilization, peak memory, power and the step time split into data
// wait and compute, with the change from A to B in percent; before it, what differs between
// the two: their settings and every field of their recorded environments.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/environment_diff.h"
#include "storage/store.h"

namespace orch {

/// What a selector picked: a configuration's successful runs, or one run.
struct Selection {
  std::string label;  ///< configuration name, or "run 12 (name, sweep night-1)"
  std::string config_hash;
  std::vector<storage::RunRecord> runs;  ///< the runs its values are averaged over
  std::int64_t run_id = 0;               ///< the run, when the selector named one (`run:N`)
};

/// Resolves a selector against a sweep's runs (`sweep_runs`, any status). A selector is a
/// configuration name, a run id, or a configuration-hash prefix (at least 4 hex digits);
/// `name:`, `run:` and `hash:` force one reading. An unknown or ambiguous selector, or one
/// with no successful run, throws InputError listing the candidates.
Selection select_runs(const storage::Store& store,
                      const std::vector<storage::RunRecord>& sweep_runs,
                      const std::string& selector);

/// One line of the comparison: each side's mean (none when not recorded), the decimals shown,
/// and the change from A to B in percent (none when a side is missing or A shows as zero).
struct ComparisonLine {
  std::string label;  ///< "throughput (img/s)"; the step split is indented with two spaces
  std::optional<double> a, b;
  int decimals = 0;
  std::optional<double> change_pct;
};

/// One setting of the resolved configuration that differs: `batch_size 8 -> 16`.
struct SettingChange {
  std::string key;   ///< flattened as in the experiment file: batch_size, optimizer.impl
  std::string a, b;  ///< the values; "not set" where a side's configuration lacks the key
};

/// The settings whose values differ between A's configuration and B's, by key.
std::vector<SettingChange> setting_differences(const Selection& a, const Selection& b);

/// The lines of the comparison, B against A, in the table's order.
std::vector<ComparisonLine> comparison_lines(const Selection& a, const Selection& b);

/// The throughput's verdict under the table, B against A: "throughput: B is 12.3% faster than
/// A, significant at 95% (Welch's t-test, n=3 vs 3)", or "inconclusive (n=...)" with why, and
/// a line for each NOISY side (sweep_diff.h's judge_change and analysis::is_noisy).
std::string throughput_verdict(const Selection& a, const Selection& b);

/// The comparison: which is A and which B, the settings and environment fields that differ,
/// then the table, B against A.
std::string format_comparison(const Selection& a, const Selection& b);

}  // namespace orch
