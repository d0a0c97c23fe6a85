// Plan revisions of a sweep (see sweep_plans.h).
#include "storage/sweep_plans.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "result/json_dump.h"
#include "storage/row_values.h"

namespace orch::storage {
namespace {

using nlohmann::json;

SweepPlan read_plan(Statement& st) {
  SweepPlan p;
  p.revision = static_cast<int>(st.column_int(0));
  p.created_at = st.column_text(1);
  if (!st.is_null(2)) p.experiment_file = st.column_text(2);
  const json doc = json::parse(st.column_text(3), nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.contains("configurations")) {
    for (const json& c : doc.at("configurations")) {
      PlannedConfig pc;
      pc.hash = c.value("hash", "");
      pc.name = c.value("name", "");
      pc.repeats = c.value("repeats", 1);
      pc.steps = c.value("steps", json::object());
      for (const json& r : c.value("rungs", json::array())) {
        pc.rungs.push_back(PlannedRung{r.value("hash", ""), r.value("measure", std::int64_t{0}),
                                       r.value("repeats", 1)});
      }
      p.configs.push_back(std::move(pc));
    }
    p.baseline = doc.value("baseline", "");
    if (doc.contains("search")) p.search = doc.at("search");
  }
  if (!st.is_null(4)) {
    const json w = json::parse(st.column_text(4), nullptr, false);
    if (w.is_array()) {
      for (const json& line : w) {
        if (line.is_string()) p.warnings.push_back(line.get<std::string>());
      }
    }
  }
  return p;
}

std::optional<SweepPlan> query_plan(const Database& db, std::int64_t sweep_id, int revision) {
  Statement st(db, R"(SELECT revision, created_at, experiment_file, plan_json, warnings_json
                      FROM sweep_plans WHERE sweep_id = ?1 AND (?2 = 0 OR revision = ?2)
                      ORDER BY revision DESC LIMIT 1)");
  st.bind(1, sweep_id).bind(2, std::int64_t{revision});
  if (!st.step()) return std::nullopt;
  return read_plan(st);
}

std::string steps_text(const json& steps) {
  if (!steps.is_object() || steps.empty()) return "defaults";
  std::string out;
  for (const auto& [k, v] : steps.items()) out += (out.empty() ? "" : ", ") + k + " " + v.dump();
  return out;
}

std::string search_text(const json& search) {
  if (!search.is_object()) return "grid";
  std::string out =
      fmt::format("halving (eta {}, {} rungs", search.value("eta", 0), search.value("rungs", 0));
  if (search.contains("min_steps"))
    out += fmt::format(", min_steps {}", search.at("min_steps").dump());
  return out + fmt::format(", rung_repeat {})", search.value("rung_repeat", 1));
}

std::string list_names(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 5;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) {
    out += (i ? ", " : "") + names[i];
  }
  if (names.size() > kShown) out += fmt::format(", ... ({} more)", names.size() - kShown);
  return out;
}

}  // namespace

json SweepPlan::to_json() const {
  json configs_json = json::array();
  for (const PlannedConfig& c : configs) {
    configs_json.push_back(
        {{"hash", c.hash}, {"name", c.name}, {"repeats", c.repeats}, {"steps", c.steps}});
    if (c.rungs.empty()) continue;  // a grid's plan is written as it always was
    json rungs = json::array();
    for (const PlannedRung& r : c.rungs)
      rungs.push_back({{"hash", r.hash}, {"measure", r.measure}, {"repeats", r.repeats}});
    configs_json.back()["rungs"] = rungs;
  }
  json out = {{"configurations", configs_json}};
  if (!baseline.empty()) out["baseline"] = baseline;
  if (!search.is_null()) out["search"] = search;
  return out;
}

std::optional<SweepPlan> latest_plan(const Database& db, std::int64_t sweep_id) {
  return query_plan(db, sweep_id, 0);
}

std::optional<SweepPlan> plan_revision(const Database& db, std::int64_t sweep_id, int revision) {
  if (revision <= 0) return std::nullopt;
  return query_plan(db, sweep_id, revision);
}

int plan_revisions(const Database& db, std::int64_t sweep_id) {
  Statement st(db, "SELECT COALESCE(MAX(revision), 0) FROM sweep_plans WHERE sweep_id = ?1");
  st.bind(1, sweep_id);
  st.step();
  return static_cast<int>(st.column_int(0));
}

int record_plan(Database& db, std::int64_t sweep_id, const SweepPlan& plan) {
  Transaction tx(db);
  const int revision = plan_revisions(db, sweep_id) + 1;
  Statement ins(db, R"(INSERT INTO sweep_plans (sweep_id, revision, created_at, experiment_file,
                       plan_json, warnings_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6))");
  ins.bind(1, sweep_id).bind(2, std::int64_t{revision}).bind(3, utc_now());
  if (plan.experiment_file.empty())
    ins.bind_null(4);
  else
    ins.bind(4, plan.experiment_file);
  ins.bind(5, json_dump(plan.to_json())).bind(6, json_dump(json(plan.warnings)));
  ins.step();
  tx.commit();
  return revision;
}

void set_plan_warnings(Database& db, std::int64_t sweep_id, int revision,
                       const std::vector<std::string>& warnings) {
  Statement st(db, R"(UPDATE sweep_plans SET warnings_json = ?3
                      WHERE sweep_id = ?1 AND revision = ?2)");
  st.bind(1, sweep_id).bind(2, std::int64_t{revision}).bind(3, json_dump(json(warnings)));
  st.step();
}

// The Store's plan methods: the functions above on its own connection, so that no caller
// outside storage/ needs the raw database handle.
std::optional<SweepPlan> Store::latest_plan(std::int64_t sweep_id) const {
  return storage::latest_plan(db_, sweep_id);
}

std::optional<SweepPlan> Store::plan_revision(std::int64_t sweep_id, int revision) const {
  return storage::plan_revision(db_, sweep_id, revision);
}

int Store::plan_revisions(std::int64_t sweep_id) const {
  return storage::plan_revisions(db_, sweep_id);
}

int Store::record_plan(std::int64_t sweep_id, const SweepPlan& plan) {
  return storage::record_plan(db_, sweep_id, plan);
}

int Store::set_latest_plan_warnings(std::int64_t sweep_id,
                                    const std::vector<std::string>& warnings) {
  const int revision = storage::plan_revisions(db_, sweep_id);
  if (revision != 0) storage::set_plan_warnings(db_, sweep_id, revision, warnings);
  return revision;
}

std::vector<std::string> plan_differences(const SweepPlan& stored, const SweepPlan& now) {
  std::vector<std::string> out;
  // Steps are part of every configuration's hash: a change of steps is said once, as such,
  // rather than as every configuration removed and added again.
  std::set<std::string> steps_before, steps_after;
  for (const auto& c : stored.configs) steps_before.insert(steps_text(c.steps));
  for (const auto& c : now.configs) steps_after.insert(steps_text(c.steps));
  if (steps_before != steps_after) {
    auto join = [](const std::set<std::string>& s) {
      std::string t;
      for (const auto& x : s) t += (t.empty() ? "" : " | ") + x;
      return t;
    };
    out.push_back("steps: " + join(steps_before) + " -> " + join(steps_after));
  }
  // With the steps changed every hash changed too, so configurations are matched by name.
  const bool by_name = steps_before != steps_after;
  auto key = [&](const PlannedConfig& c) { return by_name ? c.name : c.hash; };
  std::map<std::string, const PlannedConfig*> before, after;
  for (const auto& c : stored.configs) before[key(c)] = &c;
  for (const auto& c : now.configs) after[key(c)] = &c;
  std::vector<std::string> added, removed;
  std::map<std::pair<int, int>, int> repeats;  // (before, after) -> configurations
  for (const auto& c : now.configs) {
    auto it = before.find(key(c));
    if (it == before.end())
      added.push_back(c.name);
    else if (it->second->repeats != c.repeats)
      ++repeats[{it->second->repeats, c.repeats}];
  }
  for (const auto& c : stored.configs) {
    if (!after.count(key(c))) removed.push_back(c.name);
  }
  // Same names, other hashes, same steps: a setting changed that the names do not show.
  if (!by_name && added.size() == removed.size() && !added.empty()) {
    std::set<std::string> a(added.begin(), added.end()), r(removed.begin(), removed.end());
    if (a == r) {
      out.push_back(fmt::format("{} {} changed settings under the same names: {}", added.size(),
                                added.size() == 1 ? "configuration" : "configurations",
                                list_names(added)));
      added.clear();
      removed.clear();
    }
  }
  auto plural = [](std::size_t n) { return n == 1 ? "configuration" : "configurations"; };
  if (!added.empty()) {
    out.push_back(
        fmt::format("{} {} added: {}", added.size(), plural(added.size()), list_names(added)));
  }
  if (!removed.empty()) {
    out.push_back(fmt::format("{} {} removed: {}", removed.size(), plural(removed.size()),
                              list_names(removed)));
  }
  for (const auto& [change, n] : repeats) {
    out.push_back(fmt::format("repeats {} -> {} for {} {}", change.first, change.second, n,
                              plural(static_cast<std::size_t>(n))));
  }
  // The search decides which runs a configuration gets: grid and halving, or two schedules,
  // are two plans.
  if (stored.search != now.search) {
    out.push_back("search: " + search_text(stored.search) + " -> " + search_text(now.search));
  }
  // The baseline decides what every speed-up is against: a new one is a new revision, so the
  // read commands never mix the two.
  if (stored.baseline != now.baseline) {
    auto name_of = [](const SweepPlan& p) -> std::string {
      if (p.baseline.empty()) return "none (the slowest)";
      for (const auto& c : p.configs) {
        if (c.hash == p.baseline) return c.name;
      }
      return p.baseline.substr(0, 12);
    };
    out.push_back("baseline: " + name_of(stored) + " -> " + name_of(now));
  }
  return out;
}

std::vector<RunRecord> runs_of_plan(const std::vector<RunRecord>& runs, const SweepPlan& plan) {
  std::map<std::string, int> repeats;
  for (const auto& c : plan.configs) {
    repeats[c.hash] = c.repeats;
    for (const auto& r : c.rungs) repeats[r.hash] = r.repeats;
  }
  std::vector<RunRecord> out;
  for (const RunRecord& r : runs) {
    auto it = repeats.find(r.config_hash);
    if (it != repeats.end() && r.repeat < it->second) out.push_back(r);
  }
  return out;
}

}  // namespace orch::storage
