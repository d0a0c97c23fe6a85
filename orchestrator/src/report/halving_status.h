// Where a sweep with `search: halving` stands, read from its recorded runs: how far its rungs
// got, what each cut kept, and every configuration pruned with its shorter measurement and the
// rung that dropped it. `orch rank` (and the end of `orch sweep`) print it under the ranking,
// and the report shows it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/shown_runs.h"

namespace orch {

/// A configuration dropped by a cut.
struct PrunedConfig {
  std::string name, config_hash;  ///< the configuration's (full measurement's) hash
  int rung = 0;                   ///< the rung whose cut dropped it
  double images_per_s = 0;        ///< mean over its runs in that rung
  std::int64_t steps = 0;         ///< measured steps of those runs
  int runs = 0;
};

struct RungStatus {
  int index = 0;
  bool last = false;
  std::size_t planned = 0;   ///< entrants the schedule plans (ties at a cut can add)
  std::size_t measured = 0;  ///< configurations with a run that measured in this rung
  std::size_t pruned = 0;    ///< of them, dropped by its cut
  std::size_t failed = 0;    ///< configurations whose run here did not succeed
  std::int64_t steps_min = 0, steps_max = 0;  ///< measured steps of its runs (0: none yet)
  int repeats = 1;
};

struct HalvingStatus {
  bool halving = false;  ///< false: a grid sweep, nothing to say
  int eta = 0;
  std::vector<RungStatus> rungs;
  int reached = -1;                  ///< the highest rung with a recorded run; -1: none yet
  std::vector<PrunedConfig> pruned;  ///< latest rung first, fastest first within a rung
};

/// The status of the shown revision; HalvingStatus::halving false for a grid.
HalvingStatus halving_status(const ShownRuns& shown);

/// The lines `orch rank` prints under the ranking: the rungs and the pruned configurations
/// ("pruned at rung 0: 812 img/s over 6 steps"), and when the last rung has not been reached,
/// that the ranking waits for it. Empty for a grid.
std::string format_halving(const HalvingStatus& status);

}  // namespace orch
