// The console ranking: configurations, fastest first, as a fixed-width table.
#pragma once

#include <string>
#include <vector>

#include "storage/store.h"

namespace orch {

std::string format_ranking(const std::vector<storage::RankRow>& rows);

}  // namespace orch
