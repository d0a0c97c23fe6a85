// What differs between the environments of two groups of runs (two sweeps, two configurations,
// two runs): every field the runs recorded, so that a night run with OMP_NUM_THREADS=1, on
// another host or with another orch revision says so before its numbers are read. The known
// fields get a readable label and value (driver, CUDA 13.0, torch threads, a variable that was
// unset); a field this build does not know (a newer runner's, a script's own) is compared under
// its key path, so nothing recorded is left out.
#pragma once

#include <string>
#include <vector>

#include "storage/store.h"

namespace orch {

struct EnvironmentChange {
  std::string fact;  ///< "driver", "torch threads", "OMP_NUM_THREADS", "code.git_commit", ...
  std::string a, b;  ///< the values seen on each side, joined by ", " when several
};

struct EnvironmentComparison {
  std::vector<EnvironmentChange> changes;  ///< only the fields that differ, in label order
  std::vector<std::string> compared;       ///< every field that either side recorded
};

/// Compares the environments of the runs of side A with those of side B. Each side's value of a
/// field is the set of values its runs recorded ("not recorded" when none did; a watched
/// variable is "unset" where the run recorded its variables without it). Left out, because
/// they change between runs of one environment: the PCIe link's current generation and width
/// (an idle GPU lowers them; the maximum is compared), the other processes' ids on the GPU
/// (their number is compared) and a script's command line (its configuration's arguments).
EnvironmentComparison compare_environments(const std::vector<storage::RunRecord>& a,
                                           const std::vector<storage::RunRecord>& b);

/// The lines that say it: "different environments: N recorded fields differ ..." and one line
/// per field ("  OMP_NUM_THREADS  unset -> 1"), or one line saying they are the same in every
/// recorded field. `what` names the two sides: "sweeps", "runs", "configurations".
std::string format_environment_comparison(const EnvironmentComparison& c, const std::string& what);

}  // namespace orch
