// A result document's `profile` section (runner/profiler.h) as rows of run_profile and
// run_profile_ops: written when a run is recorded, and when a version-2 database is migrated
// (a document recorded by an orch that did not know the section still holds it).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "storage/sqlite.h"

namespace orch::storage {

/// Inserts the run's profile rows; does nothing when the document has no `profile` object.
void insert_profile(Database& db, std::int64_t run_id, const nlohmann::json& document);

}  // namespace orch::storage
