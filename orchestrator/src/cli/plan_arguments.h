// What `orch plan` and `orch run` share: the experiment file, key=value overrides and
// --max-runs on the command line, and turning them into a validated Plan.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "plan/run_spec.h"
#include "plugin_host/registry.h"

namespace orch::cli {

struct PlanArguments {
  std::string file;
  std::vector<std::string> overrides;
  std::size_t max_runs = 10000;
  /// The runs execute on this machine: check what they need of it (GPUs, files). False for a
  /// Slurm submission, planned on a login node for other machines.
  bool on_this_machine = true;
};

/// Declares FILE, the overrides and --max-runs on `cmd`.
void add_plan_arguments(CLI::App& cmd, PlanArguments& args);

/// Plans the experiment (with this machine's facts when args.on_this_machine). Bad input throws
/// PlanError, `file:line:col: ...`, which main.cpp prints and ends with kExitBadInput: nothing
/// has run or been written by then.
Plan plan_experiment(const PlanArguments& args, const SchemaCatalog& catalog);

/// What every command that runs an experiment starts with: load the plugins into `registry`
/// (it must outlive the runs), plan (PlanError on bad input), print the plan's notes.
Plan load_and_plan(PluginRegistry& registry, const GlobalOptions& g, const PlanArguments& args);

}  // namespace orch::cli
