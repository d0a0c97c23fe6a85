// The plan check before a sweep (see plan_revision.h).
#include "sweep/plan_revision.h"

#include <fmt/format.h>

#include <map>

namespace orch::sweep {

storage::SweepPlan sweep_plan_of(const Plan& plan) {
  storage::SweepPlan out;
  out.experiment_file = plan.file;
  std::map<std::string, std::size_t> index;
  for (const RunSpec& run : plan.runs) {
    auto [it, fresh] = index.emplace(run.hash, out.configs.size());
    if (fresh) {
      storage::PlannedConfig c;
      c.hash = run.hash;
      c.name = run.name;
      c.repeats = 0;
      c.steps = run.config.contains("steps") ? run.config.at("steps") : nlohmann::json::object();
      out.configs.push_back(std::move(c));
    }
    ++out.configs[it->second].repeats;
  }
  return out;
}

PlanCheck check_plan(const storage::Store& store, const std::string& sweep_name,
                     const storage::SweepPlan& plan, bool replan) {
  PlanCheck out;
  const auto id = store.find_sweep(sweep_name);
  const auto stored = id ? storage::latest_plan(store.database(), *id) : std::nullopt;
  if (!stored) {
    out.record = true;
    // A sweep recorded before revisions may hold runs of other plans: they stay in the
    // database, but the read commands show this revision from now on, which is said here.
    if (id) {
      const auto all = store.runs(*id);
      const std::size_t other = all.size() - storage::runs_of_plan(all, plan).size();
      if (other > 0) {
        out.message = fmt::format(
            "sweep '{}' had no plan recorded: this file's plan becomes its revision 1, and rank, "
            "compare, export and report no longer show its {} run{} of other configurations "
            "(they stay in the database)\n",
            sweep_name, other, other == 1 ? "" : "s");
      }
    }
    return out;
  }
  const auto differences = storage::plan_differences(*stored, plan);
  if (differences.empty()) return out;
  std::string what;
  for (const auto& line : differences) what += "  " + line + "\n";
  if (replan) {
    out.record = true;
    out.message = fmt::format(
        "--replan: sweep '{}' gets plan revision {} (was revision {}, recorded {}):\n{}"
        "rank, compare, export and report show the new revision; --revision {} shows the "
        "earlier one\n",
        sweep_name, stored->revision + 1, stored->revision, stored->created_at, what,
        stored->revision);
    return out;
  }
  out.ok = false;
  out.message = fmt::format(
      "the plan of {} differs from the plan sweep '{}' runs (revision {}, recorded {}{}):\n{}"
      "a sweep runs one plan, so nothing was run. Either\n"
      "  run it as a new sweep:         --sweep NEW-NAME (e.g. --sweep '{}-{{date}}')\n"
      "  or record a new plan revision: --replan (rank, compare, export and report then show "
      "the new revision; runs of configurations both revisions share are kept)\n",
      plan.experiment_file.empty() ? std::string("the file") : plan.experiment_file, sweep_name,
      stored->revision, stored->created_at,
      stored->experiment_file.empty() ? "" : " from " + stored->experiment_file, what, sweep_name);
  return out;
}

}  // namespace orch::sweep
