// The console ranking tables: `orch rank`'s (per sweep, mean ± 95% CI, ties, step split,
// memory, utilization, power, diagnosis), and the short one `orch run` prints at its end.
#pragma once

#include <string>
#include <vector>

#include "report/ranking.h"
#include "storage/store.h"

namespace orch {

/// `orch rank`'s table, with a header naming the sweep and the metric, and footnotes for
/// single runs, ties and unranked configurations.
std::string format_rank_table(const Ranking& ranking, const storage::SweepInfo& sweep);

/// `orch rank`'s table for one sweep by throughput: what `orch run` and `orch sweep` print at
/// their end.
std::string format_sweep_ranking(const storage::Store& store, std::int64_t sweep_id);

}  // namespace orch
