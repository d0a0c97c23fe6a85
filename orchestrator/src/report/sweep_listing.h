// `orch sweeps`: the sweeps of a database as a table (the latest first) or as JSON, so the
// night to compare can be found by name, date or outcome without opening the database.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "storage/store.h"

namespace orch {

/// One line per sweep, in the order given (Store::sweep_listing: the latest first): name,
/// experiment, created, last run started, runs, ok, not ok, running, plan revision. Text from
/// the database goes through terminal_text.
std::string format_sweep_listing(const std::vector<storage::SweepListing>& sweeps);

/// The same as an array of objects: name, experiment, experiment_file, created_at,
/// last_run_at (null before any run), runs, ok, not_ok, running, revision (null when none).
nlohmann::json sweep_listing_json(const std::vector<storage::SweepListing>& sweeps);

}  // namespace orch
