#include "cli/plan_arguments.h"

#include <c10/cuda/CUDAFunctions.h>

#include <iostream>

#include "cli/number_checks.h"
#include "cli/plugin_loading.h"
#include "plan/planner.h"
#include "text/terminal_text.h"

namespace orch::cli {

void add_plan_arguments(CLI::App& cmd, PlanArguments& args) {
  cmd.add_option("file", args.file, "experiment YAML")->required();
  cmd.add_option("overrides", args.overrides, "key=value overrides (dotted keys, YAML values)");
  // Checked as text first: a negative number would otherwise wrap to "no limit" in size_t.
  cmd.add_option("--max-runs", args.max_runs, "refuse plans with more runs than this")
      ->capture_default_str()
      ->check(non_negative_number());
}

Plan plan_experiment(const PlanArguments& args, const SchemaCatalog& catalog) {
  PlanOptions options{args.overrides, args.max_runs, std::nullopt};
  // The GPUs this process sees are the ones a run started from here sees (CUDA_VISIBLE_DEVICES
  // included): the runner resolves `device` against the same count.
  if (args.on_this_machine) {
    options.machine = MachineFacts{static_cast<int>(c10::cuda::device_count())};
  }
  return make_plan(args.file, catalog, options);
}

Plan load_and_plan(PluginRegistry& registry, const GlobalOptions& g, const PlanArguments& args) {
  load_registry(registry, g);
  Plan plan = plan_experiment(args, registry);  // nothing runs and no database is created
  // What `orch plan` says under its table (combinations merged), said before anything runs.
  for (const std::string& note : plan.notes) std::cout << "note: " << terminal_text(note) << "\n";
  return plan;
}

}  // namespace orch::cli
