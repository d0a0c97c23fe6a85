// `orch plan FILE [key=value ...]`: expand and validate an experiment, print its runs, run
// nothing. With --check, rehearse it: one training step of each configuration in a child
// process, every failure listed (cli/plan_check.h).
#include <filesystem>
#include <iostream>

#include "cli/command_failure.h"
#include "cli/commands.h"
#include "cli/plan_arguments.h"
#include "cli/plan_check.h"
#include "cli/plugin_loading.h"
#include "cli/stop_signals.h"
#include "plan/halving_table.h"
#include "plan/plan_table.h"
#include "report/plan_estimate.h"
#include "storage/store.h"
#include "text/terminal_text.h"

namespace orch::cli {
namespace {

// The plan's estimate from the results database's history, read only, never created: a plan is
// often made before the first sweep, and a database orch cannot read only loses the history.
std::string estimate_text(const Plan& plan, const std::string& db) {
  std::string note;
  if (std::filesystem::exists(db)) {
    try {
      const storage::Store store(db, storage::Store::ReadOnly{});
      return format_plan_estimate(estimate_plan(plan, &store), db);
    } catch (const std::runtime_error& e) {
      note = "(its history not used: " + terminal_text(e.what()) + ")\n";
    }
  }
  return format_plan_estimate(estimate_plan(plan, nullptr), db) + note;
}

struct PlanArgs {
  PlanArguments plan;
  bool check = false;      // --check: rehearse the plan
  bool no_wait = false;    // with --check: a device in use ends the command instead of a wait
  bool elsewhere = false;  // plan for another machine
};

int run_plan(const PlanArgs& a, const GlobalOptions& g) {
  if (a.elsewhere && a.check) {
    throw bad_input("orch plan: --check rehearses on this machine; it cannot go with --elsewhere");
  }
  // --check is stopped by a signal from its first moment (exit 3), planning included.
  std::optional<StopSignals> stop;
  if (a.check) stop.emplace();
  PlanArguments args = a.plan;
  args.on_this_machine = !a.elsewhere;
  PluginRegistry registry;
  load_registry(registry, g);
  const Plan plan = plan_experiment(args, registry);
  std::cout << format_plan_table(plan) << format_halving_schedule(plan)
            << estimate_text(plan, g.db);
  if (!a.check) return kExitOk;
  return rehearse_plan(plan, g, visible_gpu_slots(), /*grace_s=*/10, !a.no_wait);
}

}  // namespace

void add_plan_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand("plan", "expand and validate an experiment; runs nothing");
  auto a = std::make_shared<PlanArgs>();
  add_plan_arguments(*cmd, a->plan);
  cmd->add_flag("--check", a->check,
                "rehearse: train one step of each configuration in a child process (one per GPU "
                "at a time) and list every failure; records nothing");
  cmd->add_flag("--no-wait", a->no_wait,
                "with --check: when a device is in use by another orch, exit at once (code 2) "
                "naming it, instead of waiting for it");
  // A plan written here for a GPU machine or a cluster must not fail for what this machine
  // lacks (as `orch submit` plans): the checks of the machine's GPUs and files are left out.
  cmd->add_flag("--elsewhere", a->elsewhere,
                "plan for another machine: leave out the checks of this one (its GPUs, the "
                "dataset and model files the configurations read)");
  cmd->callback([&g, &exit_code, a] { exit_code = run_plan(*a, g); });
}

}  // namespace orch::cli
