// Schema creation and migration steps. Each step takes the schema from version N to N+1 and
// runs inside the caller's transaction, so a failed migration leaves the file as it was.
#pragma once

#include "storage/sqlite.h"

namespace orch::storage {

/// Version 0 (a new, empty file) -> the current schema (storage/schema.sql).
void create_schema(Database& db);

/// Version 1 -> the current version (it creates the current schema, then copies the runs into
/// it, so no later step runs after it). Every v1 run is kept, with its id, metrics and steps:
/// * one sweep per experiment name, named after the experiment;
/// * v1 appended a new row each time an experiment was run again, so (experiment, hash,
///   repeat) could repeat. Version 2 allows one row per (sweep, hash, repeat), so the later
///   duplicates become extra repeats of their configuration: the first row of each
///   (experiment, hash, repeat) keeps its index, the others get max(repeat)+1, +2, ... in the
///   order they were recorded. v1's ranking already counted them as runs of the configuration,
///   so the ranking does not change. The document_json keeps the original index.
/// * attempts = 1; the environment columns, duration and diagnosis are filled from the stored
///   documents.
void migrate_v1_to_v2(Database& db);

/// Version 2 -> 3: the profile tables (run_profile, run_profile_ops) and run_summary with the
/// profile columns, created from the current schema's own statements so a migrated file and a
/// new one have the same definitions. Version-2 orch never profiled, but a document it recorded
/// from a newer child may hold a `profile` section: those are copied into the new tables.
void migrate_v2_to_v3(Database& db);

/// Version 3 -> 4: the sweep_plans table (plan revisions), from the current schema's own
/// statement. Sweeps recorded before it have no revision: read commands show all their runs,
/// and the next `orch sweep` of one records its file's plan as revision 1.
void migrate_v3_to_v4(Database& db);

/// Version 4 -> 5: runs.status allows 'diverged', runs gains failure_class, and the tables
/// batch_probes and device_checks; the views that show statuses are recreated. SQLite cannot
/// alter a CHECK constraint, and rebuilding `runs` would cascade into every table that
/// references it, so the column is added and the table's stored definition is then replaced
/// with the current one (SQLite's documented procedure for changes that leave the stored rows'
/// format alone: a wider CHECK on the same columns).
void migrate_v4_to_v5(Database& db);

/// Version 5 -> 6: the sweep_invocations table and the sweep_efficiency view. Sweeps recorded
/// before have no invocations; the view lists them once a later invocation records one.
void migrate_v5_to_v6(Database& db);

/// Version 6 -> 7: the run_environment view gains a column for every environment fact
/// `orch compare` reads (device, GPU UUID, memory cap, torch threads, CPU model, persistence
/// mode, each watched variable, and `variables` whole); recreated from the current schema's
/// statement. Views hold no rows, so nothing else changes.
void migrate_v6_to_v7(Database& db);

/// Version 7 -> 8: successive halving. runs.status allows 'pruned' and runs gains `rung` (the
/// same procedure as version 5's: the column added, the stored definition replaced); the views
/// ranking (full measurements only), sweep_status (a pruned count) and run_summary (the rung)
/// are recreated. Every run recorded before is a full measurement: rung NULL.
void migrate_v7_to_v8(Database& db);

/// Version 8 -> 9: host telemetry. The host_samples table, and the views run_key_metrics and
/// run_summary with the host's CPU, load and memory summaries (recreated from the current
/// schema's statements). The summaries were never recorded before, so earlier runs read NULL.
void migrate_v8_to_v9(Database& db);

/// Version 9 -> 10: the ranking view gains images_per_s_ci95_share and noisy (rank's NOISY),
/// so a user's own SQL sees what rank marks. Recreated from the current schema's statement;
/// nothing stored changes.
void migrate_v9_to_v10(Database& db);

/// Fills student_t_975 (dof 1..1000) if it is empty.
void fill_t_quantiles(Database& db);

/// Recomputes the diagnosis column of every 'ok' run from its stored document.
void rediagnose_all(Database& db);

}  // namespace orch::storage
