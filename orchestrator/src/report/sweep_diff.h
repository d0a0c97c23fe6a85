// `orch compare --sweeps A B`: night against night. Configurations are paired by hash across
// the two sweeps, and each is judged faster, slower or no change by Welch's t-test on its
// repeats' throughput at 95%; what changed in the environment (every field the runs recorded:
// versions, host, CPU, torch threads, variables, ...) is listed first, since it is usually why.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/environment_diff.h"
#include "storage/statistics.h"
#include "storage/store.h"
#include "storage/welch.h"

namespace orch {

struct ConfigChange {
  std::string name, config_hash;     ///< the name in B
  storage::Summary a, b;             ///< throughput (img/s) over the successful runs
  std::optional<double> change_pct;  ///< (b - a) / a in percent
  std::optional<storage::WelchResult> test;
  std::string verdict;  ///< faster, slower, no change, not enough repeats, no successful run
};

struct SweepDiff {
  EnvironmentComparison environment;
  std::vector<ConfigChange> configs;        ///< in B's order by name
  std::vector<std::string> only_a, only_b;  ///< configuration names in one sweep only
};

/// Pairs the runs of two sweeps (any statuses; only 'ok' runs with a throughput count).
SweepDiff diff_sweeps(const std::vector<storage::RunRecord>& a,
                      const std::vector<storage::RunRecord>& b);

/// The table: environment differences first, then one line per configuration and the rule.
std::string format_sweep_diff(const SweepDiff& diff, const std::string& a_name,
                              const std::string& b_name);

}  // namespace orch
