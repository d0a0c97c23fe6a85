// Combinations that resolve to one configuration (see plan_merges.h).
#include "plan/plan_merges.h"

#include <fmt/format.h>

#include <algorithm>

namespace orch {
namespace {

using json = nlohmann::json;

// An axis' values that some combination has but no configuration uses, and the combinations
// that hold them.
struct LostValues {
  std::vector<const MatrixCell*> cells;
  std::vector<std::string> combos;
};

LostValues find_lost_values(const MatrixAxis& axis, const std::string& key_name,
                            const ConfigurationCombos& combos, const std::vector<json>& configs) {
  LostValues lost;
  for (const MatrixCell& v : axis.values) {
    bool seen = false, used = false;
    std::vector<std::string> with_v;
    auto holds = [&](const MatrixCombination* c) {
      const MatrixCell* cell = c->find(axis.path);
      return cell && cell->value == v.value;
    };
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const auto& merged = combos.merged[i];
      const bool here = holds(combos.kept[i]);
      if (here && configs[i].contains(key_name)) used = true;
      if (here) with_v.push_back(describe_combo(*combos.kept[i]));
      for (const MatrixCombination* c : merged) {
        if (holds(c)) with_v.push_back(describe_combo(*c));
      }
      if (here || std::any_of(merged.begin(), merged.end(), holds)) seen = true;
    }
    if (!seen || used) continue;
    lost.cells.push_back(&v);
    lost.combos.insert(lost.combos.end(), with_v.begin(), with_v.end());
  }
  return lost;
}

// The first few combinations; the message needs a sample, not all of them.
std::string list_combos(const std::vector<std::string>& combos) {
  std::string listed;
  for (std::size_t i = 0; i < combos.size() && i < 4; ++i) {
    listed += (i ? ", " : "") + combos[i];
  }
  if (combos.size() > 4) listed += fmt::format(" and {} more", combos.size() - 4);
  return listed;
}

bool include_sets_workload(const MatrixCombination* c) {
  for (const MatrixEntry* e : c->includes) {
    for (const MatrixPair& p : e->pairs) {
      if (p.path.rfind("workload", 0) == 0) return true;
    }
  }
  return false;
}

// The usual cause of a lost value: an include meant as a configuration of its own
// (`{workload: {kind: builtin}}`) fits, and so joins, every combination.
std::string lost_value_hint(const MatrixAxis& axis, const ConfigurationCombos& combos) {
  bool by_include = false;
  for (std::size_t i = 0; i < combos.kept.size(); ++i) {
    const auto& merged = combos.merged[i];
    by_include = by_include || include_sets_workload(combos.kept[i]) ||
                 std::any_of(merged.begin(), merged.end(), include_sets_workload);
  }
  return by_include ? "; an include entry that sets `workload` joins every combination it fits: "
                      "to make it a configuration of its own, give it a value of `" +
                          axis.path + "` that no combination has"
                    : "; remove the axis, or vary the workload so that some run reads it";
}

void report_lost_values(const MatrixAxis& axis, const std::string& key_name, const LostValues& lost,
                        const ConfigurationCombos& combos, PlanErrorList& problems) {
  // Only a built-in run drops `args`; only a script run drops the trainer's keys.
  const std::string why = (key_name == "args" ? "a built-in run" : "a script run") +
                          std::string(", which has no ") + key_name;
  const std::string hint = lost_value_hint(axis, combos);
  if (lost.cells.size() == axis.values.size()) {
    problems.add(PlanError(axis.mark, "matrix." + axis.path,
                           "no configuration uses this axis: every combination is " + why +
                               ", so the combinations " + list_combos(lost.combos) +
                               " merge into one another" + hint));
    return;
  }
  for (const MatrixCell* v : lost.cells) {
    problems.add(PlanError(v->node ? v->node->mark : axis.mark, v->key_path,
                           "no configuration uses this value: every combination with it "
                           "is " +
                               why + ", so it merges into another" + hint));
  }
}

}  // namespace

std::string describe_combo(const MatrixCombination& c) {
  std::string out;
  for (const auto& [path, cell] : c.values) {
    out += (out.empty() ? "" : ", ") + path + "=" + written_form(*cell);
  }
  return "(" + out + ")";
}

// Merging is meant for a matrix that crosses the two kinds of run (workload.kind: [builtin,
// script] x precision x args: each value still reaches a run of the kind that reads it); a
// value that reaches none measures nothing, and is refused.
void check_lost_axes(const MatrixSpec& spec, const std::map<std::string, SettingPath>& paths,
                     const ConfigurationCombos& combos, const std::vector<json>& configs,
                     PlanErrorList& problems) {
  if (std::all_of(combos.merged.begin(), combos.merged.end(),
                  [](const auto& m) { return m.empty(); })) {
    return;
  }
  for (const MatrixAxis& axis : spec.axes) {
    const KeySpec& key = *paths.at(axis.path).key;
    if (key.name == "workload") continue;  // a built-in run's workload is the default one
    const LostValues lost = find_lost_values(axis, key.name, combos, configs);
    if (!lost.cells.empty()) report_lost_values(axis, key.name, lost, combos, problems);
  }
}

void note_merges(std::size_t combinations, const ConfigurationCombos& combos,
                 const std::vector<std::string>& names, Plan& plan) {
  std::size_t count = 0;
  std::string which;
  for (std::size_t i = 0; i < combos.merged.size(); ++i) {
    if (combos.merged[i].empty()) continue;
    if (++count > 2) continue;  // a sample says what happened; the table says the rest
    std::string also;
    for (const MatrixCombination* c : combos.merged[i])
      also += (also.empty() ? "" : ", ") + describe_combo(*c);
    which += fmt::format("{}{} {} also stands for {}", which.empty() ? "" : "; ", names[i],
                         describe_combo(*combos.kept[i]), also);
  }
  if (count == 0) return;
  if (count > 2) which += fmt::format("; and {} more", count - 2);
  plan.notes.push_back(fmt::format(
      "{} matrix combinations are {} configurations: a script run has no model, precision or "
      "other key of orch's trainer, and a built-in run no args, so combinations that differ "
      "only there are one configuration: {}",
      combinations, combos.kept.size(), which));
}

}  // namespace orch
