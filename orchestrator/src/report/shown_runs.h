// The runs a read-only command shows for a sweep: those of one plan revision (the latest by
// default), so a sweep whose file changed never lists a configuration name twice. A sweep
// recorded before plan revisions shows all its runs, and configurations that share a name
// there are told apart by their hash.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "storage/store.h"

namespace orch {

struct ShownRuns {
  std::vector<storage::RunRecord> runs;
  int revision = 0;   ///< the revision shown; 0: the sweep has none recorded
  int revisions = 0;  ///< how many it has
  std::string note;  ///< a line saying what is shown and why, or empty when there is nothing to say
  /// The hash of the revision's `baseline:` configuration; empty when the file names none.
  std::string baseline;
  /// `search: halving`: the measured runs (ok or pruned) of the rungs before the last. They are
  /// shorter measurements, so they are kept out of `runs`, which rank, compare, export and the
  /// report read: a mean never mixes them with full ones. A rung's run that failed stays in
  /// `runs`, where failures are listed.
  std::vector<storage::RunRecord> rung_runs;
  /// The revision's search (storage::SweepPlan::search): null for the grid.
  nlohmann::json search;
  /// Per configuration hash, its name, in plan order (halving's summary lists by it).
  std::vector<std::pair<std::string, std::string>> configurations;
};

/// The runs of `sweep` to show: those of plan revision `revision` (0: the latest). A revision
/// that does not exist is an InputError naming the ones that do.
ShownRuns shown_runs(const storage::Store& store, const storage::SweepInfo& sweep,
                     int revision = 0);

}  // namespace orch
