// The planner: an experiment YAML file -> a Plan of fully resolved, validated RunSpecs.
//
// Every run is checked against the plugins' parameter schemas before anything runs, so a typo
// in the last combination of an overnight matrix fails at `orch plan`, not at 3 a.m. Any bad
// input throws PlanError pointing at the line and column (see docs/experiment-file.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan_checks.h"
#include "plan/plan_error.h"
#include "plan/run_spec.h"

namespace orch {

struct PlanOptions {
  /// `key=value` overrides, applied in order (see overrides.h).
  std::vector<std::string> overrides;
  /// A plan with more runs (configurations x repeats) is refused.
  std::size_t max_runs = 10000;
  /// The machine the runs will execute on, for the checks that depend on it (a GPU that a
  /// configuration needs, files it reads); absent when they run elsewhere (a Slurm submission).
  std::optional<MachineFacts> machine = std::nullopt;
  /// What this process may still allocate, in bytes; empty: what the machine and the process's
  /// limits allow (plan/plan_memory.h). A plan whose estimate is over half of it is refused
  /// before it is built.
  std::optional<std::uint64_t> allocatable_bytes = std::nullopt;
};

/// An experiment file larger than this is refused unread (the largest shipped one is a few KiB).
constexpr std::size_t kMaxExperimentFileBytes = std::size_t{1} << 20;

/// The text of the experiment file at `path`. Throws PlanError naming the path for a file that
/// cannot be read, is not a regular file (a device such as /dev/zero, a FIFO, a folder) or is
/// larger than kMaxExperimentFileBytes; never reads more than that.
std::string read_experiment_file(const std::string& path);

/// Reads and plans the experiment file at `path` (shown in messages as given). Problems the
/// plan-time checks (plan_checks.h) find in resolved configurations are thrown together, as
/// PlanErrors, after every configuration was checked.
Plan make_plan(const std::string& path, const SchemaCatalog& catalog, const PlanOptions& opts = {});

/// Plans YAML text; `display_path` is what messages and Plan::file show.
Plan make_plan_from_string(const std::string& yaml, const std::string& display_path,
                           const SchemaCatalog& catalog, const PlanOptions& opts = {});

}  // namespace orch
