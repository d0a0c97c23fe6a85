// Plan revisions of a sweep (the sweep_plans table): which configurations, with how many
// repeats and which steps, one revision of a sweep runs; how two plans differ; and which of a
// sweep's runs belong to a revision.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "storage/sqlite.h"
#include "storage/store.h"

namespace orch::storage {

/// A shorter measurement of a configuration in a rung of successive halving, before the last.
struct PlannedRung {
  std::string hash;          ///< the rung run's own hash (plan/halving_schedule.h: rung_hash)
  std::int64_t measure = 0;  ///< measured steps
  int repeats = 1;
};

struct PlannedConfig {
  std::string hash, name;
  int repeats = 1;
  nlohmann::json steps;  ///< the configuration's `steps` group: {"warmup": 10, "measure": 50}
  std::vector<PlannedRung> rungs{};  ///< `search: halving`: rungs before the last; else none
};

struct SweepPlan {
  int revision = 0;  ///< 0: not recorded
  std::string created_at, experiment_file;
  std::vector<PlannedConfig> configs;  ///< in plan order
  std::vector<std::string> warnings;   ///< the doctor's warnings at the sweep's start
  /// The hash of the configuration the file's `baseline:` names; empty when none.
  std::string baseline;
  /// `search: halving`: {"method": "halving", "eta", "rungs" (as used), "rung_repeat",
  /// "min_steps" (when written), "schedule": [{"entrants", "keep", "repeats"}, ...]}; null for
  /// the grid.
  nlohmann::json search;

  nlohmann::json to_json() const;  ///< plan_json: {"configurations": [...], "baseline": hash}
};

/// The latest revision of the sweep, or none when none was recorded (a sweep from before
/// revisions, or one never run by `orch sweep`).
std::optional<SweepPlan> latest_plan(const Database& db, std::int64_t sweep_id);
/// One revision, or none.
std::optional<SweepPlan> plan_revision(const Database& db, std::int64_t sweep_id, int revision);
/// How many revisions the sweep has (0: none recorded).
int plan_revisions(const Database& db, std::int64_t sweep_id);
/// Records `plan` as the sweep's next revision; returns its number.
int record_plan(Database& db, std::int64_t sweep_id, const SweepPlan& plan);
/// Replaces the warnings stored with a revision.
void set_plan_warnings(Database& db, std::int64_t sweep_id, int revision,
                       const std::vector<std::string>& warnings);

/// What differs between the stored plan and a new one, one line each ("steps.measure: 50 ->
/// 100", "2 configurations added: a, b", "repeats 3 -> 5 for 4 configurations"); empty when
/// they run the same configurations with the same repeats.
std::vector<std::string> plan_differences(const SweepPlan& stored, const SweepPlan& now);

/// The runs of `runs` that belong to the revision: its configurations' runs with repeat <
/// their repeats, and, for successive halving, their rungs' runs likewise.
std::vector<RunRecord> runs_of_plan(const std::vector<RunRecord>& runs, const SweepPlan& plan);

}  // namespace orch::storage
