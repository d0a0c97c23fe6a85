// The plan check before a sweep (see plan_revision.h).
#include "sweep/plan_revision.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "plan/halving_schedule.h"
#include "result/config_flatten.h"
#include "result/json_dump.h"

namespace orch::sweep {

storage::SweepPlan sweep_plan_of(const Plan& plan) {
  storage::SweepPlan out;
  out.experiment_file = plan.file;
  std::map<std::string, std::size_t> index, first_run;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const RunSpec& run = plan.runs[i];
    auto [it, fresh] = index.emplace(run.hash, out.configs.size());
    if (fresh) {
      first_run[run.hash] = i;
      storage::PlannedConfig c;
      c.hash = run.hash;
      c.name = run.name;
      c.repeats = 0;
      const nlohmann::json config = run.config.json();
      c.steps = config.contains("steps") ? config.at("steps") : nlohmann::json::object();
      out.configs.push_back(std::move(c));
    }
    ++out.configs[it->second].repeats;
    if (!plan.baseline.empty() && run.name == plan.baseline) out.baseline = run.hash;
  }
  if (!plan.search.halving()) return out;
  const HalvingSchedule schedule = halving_schedule(plan);
  out.search = schedule_json(plan.search, schedule);
  for (storage::PlannedConfig& c : out.configs) {
    const RunSpec& full = plan.runs[first_run.at(c.hash)];
    for (int k = 0; k + 1 < schedule.count(); ++k) {
      const RunSpec rung = rung_run(full, schedule, k, 0);
      c.rungs.push_back(
          {rung.hash, rung.measure_steps, schedule.rungs[static_cast<std::size_t>(k)].repeats});
    }
  }
  return out;
}

namespace {

// Changes that other lines of the message already say (steps, repeats) or that no hash covers
// (config_hash.cpp: a run's time limit, where a script was found).
bool said_elsewhere(const std::string& key) {
  return key.rfind("steps.", 0) == 0 || key == "repeat" || key == "timeout" ||
         key == "workload.script_path";
}

// A value as a line can show it: text without quotes, long text cut.
std::string shown(const std::map<std::string, nlohmann::json>& flat, const std::string& key) {
  const auto it = flat.find(key);
  if (it == flat.end()) return "(none)";
  std::string text = it->second.is_string() ? it->second.get<std::string>() : json_dump(it->second);
  constexpr std::size_t kCut = 40;
  if (text.size() > kCut) text = text.substr(0, kCut - 3) + "...";
  return text;
}

}  // namespace

std::vector<std::string> changed_settings(const storage::SweepPlan& stored, const Plan& planned,
                                          const std::vector<storage::RunRecord>& recorded) {
  constexpr std::size_t kConfigs = 5, kKeys = 4;
  std::map<std::string, std::string> old_hash;  // name -> hash in the stored revision
  std::set<std::string> stored_hashes;
  for (const auto& c : stored.configs) {
    old_hash[c.name] = c.hash;
    stored_hashes.insert(c.hash);
  }
  std::vector<std::string> out;
  std::set<std::string> done;
  for (const RunSpec& run : planned.runs) {
    if (out.size() == kConfigs) break;
    if (stored_hashes.count(run.hash) || !done.insert(run.name).second) continue;
    const auto was = old_hash.find(run.name);
    if (was == old_hash.end()) continue;  // an added configuration, said as such
    const storage::RunRecord* old_run = nullptr;
    for (const auto& r : recorded) {
      if (r.config_hash == was->second && r.config.is_object()) {
        old_run = &r;
        break;
      }
    }
    if (!old_run) continue;  // nothing recorded of the old configuration: nothing to compare
    std::map<std::string, nlohmann::json> before, after;
    flatten_json(old_run->config, "", before);
    flatten_json(run.config.json(), "", after);
    std::set<std::string> keys;
    for (const auto& [k, v] : before) keys.insert(k);
    for (const auto& [k, v] : after) keys.insert(k);
    std::vector<std::string> changes;
    std::size_t more = 0;
    for (const auto& k : keys) {
      const auto b = before.find(k), a = after.find(k);
      const bool same = b != before.end() && a != after.end() && b->second == a->second;
      if (same || said_elsewhere(k)) continue;
      if (changes.size() == kKeys) {
        ++more;
        continue;
      }
      changes.push_back(fmt::format("{} {} -> {}", k, shown(before, k), shown(after, k)));
    }
    if (changes.empty()) continue;
    std::string line = run.name + ": ";
    for (std::size_t i = 0; i < changes.size(); ++i) line += (i ? ", " : "") + changes[i];
    if (more) line += fmt::format(" (and {} more)", more);
    out.push_back(line);
  }
  return out;
}

PlanCheck check_plan(const storage::Store& store, const std::string& sweep_name,
                     const storage::SweepPlan& plan, bool replan, const Plan* planned) {
  PlanCheck out;
  const auto id = store.find_sweep(sweep_name);
  const auto stored = id ? store.latest_plan(*id) : std::nullopt;
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
  if (planned) {
    for (const auto& line : changed_settings(*stored, *planned, store.runs(*id)))
      what += "    " + line + "\n";
  }
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
