// The runs a read-only command shows (see shown_runs.h).
#include "report/shown_runs.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "report/input_error.h"
#include "storage/sweep_plans.h"

namespace orch {

ShownRuns shown_runs(const storage::Store& store, const storage::SweepInfo& sweep, int revision) {
  ShownRuns out;
  std::vector<storage::RunRecord> all = store.runs(sweep.id);
  out.revisions = store.plan_revisions(sweep.id);
  if (revision != 0 && (revision < 0 || revision > out.revisions)) {
    throw InputError(
        out.revisions == 0
            ? fmt::format("sweep '{}' has no plan revisions recorded; leave out --revision",
                          sweep.name)
            : fmt::format("sweep '{}' has plan revisions 1..{}, not {}", sweep.name, out.revisions,
                          revision));
  }
  if (out.revisions == 0) {
    // Before revisions one sweep could hold two plans: a name used by two configurations is
    // shown with its hash, so no row looks like a repeat of another.
    std::map<std::string, std::set<std::string>> hashes;
    for (const auto& r : all) hashes[r.name].insert(r.config_hash);
    bool renamed = false;
    for (auto& r : all) {
      if (hashes[r.name].size() > 1) {
        r.name += "@" + r.config_hash.substr(0, 8);
        renamed = true;
      }
    }
    if (renamed) {
      out.note =
          "note: this sweep ran more than one plan before plan revisions were recorded; "
          "configurations that share a name are shown as name@hash";
    }
    out.runs = std::move(all);
    return out;
  }
  const auto plan =
      revision == 0 ? store.latest_plan(sweep.id) : store.plan_revision(sweep.id, revision);
  out.revision = plan->revision;
  out.baseline = plan->baseline;
  out.runs = storage::runs_of_plan(all, *plan);
  out.search = plan->search;
  for (const auto& c : plan->configs) out.configurations.emplace_back(c.hash, c.name);
  if (out.search.is_object()) {
    std::vector<storage::RunRecord> full;
    std::set<std::string> pruned;  // configurations a cut dropped
    for (auto& r : out.runs) {
      const bool shorter = r.rung && (r.status == "ok" || r.status == "pruned");
      if (shorter && r.status == "pruned")
        pruned.insert(
            r.config.value("search", nlohmann::json::object()).value("configuration", ""));
      (shorter ? out.rung_runs : full).push_back(std::move(r));
    }
    // A pruned configuration is not ranked, whatever full runs an earlier grid revision of the
    // sweep left of it.
    out.runs.clear();
    for (auto& r : full)
      if (!pruned.count(r.config_hash)) out.runs.push_back(std::move(r));
  }
  if (out.revisions > 1) {
    const std::size_t hidden = all.size() - out.runs.size() - out.rung_runs.size();
    out.note = fmt::format("plan revision {} of {} (recorded {}){}; --revision N shows another",
                           out.revision, out.revisions, plan->created_at,
                           hidden == 0 ? std::string()
                                       : fmt::format(", {} run{} of other revisions not shown",
                                                     hidden, hidden == 1 ? "" : "s"));
  }
  return out;
}

}  // namespace orch
