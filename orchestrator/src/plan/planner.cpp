// The planning pipeline (see planner.h):
//   YAML -> located tree -> top-level keys -> base Draft -> matrix spec -> overrides ->
//   expansion -> one Draft per configuration -> resolved RunSpecs, hashed and named.
#include "plan/planner.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "plan/config_draft.h"
#include "plan/config_hash.h"
#include "plan/did_you_mean.h"
#include "plan/experiment_schema.h"
#include "plan/matrix.h"
#include "plan/overrides.h"
#include "plan/plan_names.h"
#include "plan/scalars.h"
#include "plan/yaml_tree.h"

namespace orch {

namespace {

const std::vector<std::string> kTopLevelKeys = {"name", "description", "base", "matrix"};

// The matrix as written, plus each path's validated SettingPath.
struct ParsedMatrix {
  bool present = false;
  MatrixSpec spec;
  std::map<std::string, SettingPath> paths;
};

class Planner {
 public:
  Planner(const SchemaCatalog& catalog, const PlanOptions& opts) : catalog_(catalog), opts_(opts) {}

  Plan plan(const std::string& yaml, const std::string& display_path) {
    auto file = std::make_shared<const std::string>(display_path);
    experiment_dir_ = std::filesystem::path(display_path).parent_path().string();
    root_ = parse_yaml(yaml, file);
    Plan plan;
    plan.file = display_path;
    read_top_level(plan);
    for (const std::string& text : opts_.overrides) apply_override(parse_override(text));
    expand(plan);
    return plan;
  }

 private:
  void read_top_level(Plan& plan) {
    if (root_.is_null()) {
      throw PlanError(root_.mark, "", "the experiment file is empty; it needs at least 'name'",
                      join(kTopLevelKeys));
    }
    if (!root_.is_mapping()) {
      throw PlanError(root_.mark, "",
                      "expected a mapping of experiment keys, got " + describe(root_),
                      join(kTopLevelKeys));
    }
    const YNode* name = nullptr;
    const YNode* base = nullptr;
    const YEntry* matrix = nullptr;
    for (const YEntry& e : root_.entries) {
      if (e.key == "name") {
        name = &e.value;
      } else if (e.key == "description") {
        if (!e.value.is_null() && !e.value.is_scalar()) {
          throw PlanError(e.value.mark, "description", "expected text, got " + describe(e.value));
        }
        plan.description = e.value.text;
      } else if (e.key == "base") {
        base = &e.value;
      } else if (e.key == "matrix") {
        matrix = &e;
      } else if (find_experiment_key(e.key)) {
        throw PlanError(e.key_mark, e.key, "'" + e.key + "' belongs under 'base:'",
                        join(kTopLevelKeys));
      } else {
        throw PlanError(e.key_mark, e.key, unknown_with_suggestion("key", e.key, kTopLevelKeys),
                        join(kTopLevelKeys));
      }
    }
    if (!name) {
      throw PlanError(root_.mark, "name", "missing required key 'name'", "[A-Za-z0-9_.-]+");
    }
    static const std::regex kName(R"([A-Za-z0-9_.-]+)");
    if (!name->is_scalar() || !std::regex_match(name->text, kName)) {
      throw PlanError(
          name->mark, "name",
          "expected a name of letters, digits, '_', '.' and '-', got " + describe(*name),
          "[A-Za-z0-9_.-]+");
    }
    plan.name = name->text;
    if (base) {
      if (!base->is_null() && !base->is_mapping()) {
        throw PlanError(base->mark, "base", "expected a mapping, got " + describe(*base),
                        join(experiment_key_names()));
      }
      apply_base(base_, *base, catalog_);
      base_mark_ = base->mark;
    } else {
      base_mark_ = root_.mark;
    }
    if (matrix) read_matrix(*matrix);
  }

  MatrixCell cell(const SettingPath& path, const YNode& value, std::string key_path) {
    return MatrixCell{canonical_setting(path, value, key_path, catalog_), &value, key_path};
  }

  void read_matrix(const YEntry& m) {
    matrix_.present = true;
    const YNode& node = m.value;
    // Whole-matrix problems (too many runs, everything excluded) point at `matrix:` itself.
    matrix_.spec.mark = m.key_mark;
    if (node.is_null() || (node.is_mapping() && node.entries.empty())) {
      throw PlanError(node.mark, "matrix",
                      "the matrix is empty; add an axis (e.g. batch_size: [64, 128]) or remove "
                      "'matrix:'");
    }
    if (!node.is_mapping()) {
      throw PlanError(node.mark, "matrix", "expected a mapping of axes, got " + describe(node));
    }
    for (const YEntry& e : node.entries) {
      const std::string key_path = "matrix." + e.key;
      if (e.key == "include" || e.key == "exclude") {
        read_entries(e, e.key == "include" ? matrix_.spec.include : matrix_.spec.exclude);
        continue;
      }
      SettingPath path = parse_setting_path(e.key, e.key_mark, key_path, true);
      if (!e.value.is_sequence()) {
        throw PlanError(e.value.mark, key_path,
                        "expected a list of values for this axis, got " + describe(e.value),
                        "[value, value, ...]");
      }
      MatrixAxis axis{e.key, e.value.mark, {}, false};
      for (std::size_t i = 0; i < e.value.items.size(); ++i) {
        axis.values.push_back(
            cell(path, e.value.items[i], key_path + "[" + std::to_string(i) + "]"));
      }
      matrix_.paths.emplace(e.key, std::move(path));
      matrix_.spec.axes.push_back(std::move(axis));
    }
  }

  void read_entries(const YEntry& e, std::vector<MatrixEntry>& out) {
    const std::string key_path = "matrix." + e.key;
    if (!e.value.is_sequence()) {
      throw PlanError(e.value.mark, key_path,
                      "expected a list of mappings, got " + describe(e.value));
    }
    for (std::size_t i = 0; i < e.value.items.size(); ++i) {
      const YNode& item = e.value.items[i];
      const std::string item_path = key_path + "[" + std::to_string(i) + "]";
      if (!item.is_mapping() && !item.is_null()) {
        throw PlanError(item.mark, item_path,
                        "expected a mapping of axis: value, got " + describe(item));
      }
      MatrixEntry entry{{}, item.mark, item_path, {}, {}};
      for (const YEntry& p : item.entries) {
        const std::string pair_path = item_path + "." + p.key;
        if (p.key == "label" && e.key == "include") {
          read_label(p, pair_path, entry);
          continue;
        }
        SettingPath path = parse_setting_path(p.key, p.key_mark, pair_path, true);
        entry.pairs.push_back(MatrixPair{p.key, p.key_mark, cell(path, p.value, pair_path)});
        matrix_.paths.emplace(p.key, std::move(path));
      }
      out.push_back(std::move(entry));
    }
  }

  // A label names the configuration its include entry makes; it is not an axis, so it is not
  // part of the configuration or its hash.
  static void read_label(const YEntry& p, const std::string& key_path, MatrixEntry& entry) {
    static const std::regex kLabel(R"([A-Za-z0-9_.,:=+()/ -]{1,80})");
    const YNode& v = p.value;
    if (!v.is_scalar() || !std::regex_match(v.text, kLabel) || v.text.front() == ' ' ||
        v.text.back() == ' ') {
      throw PlanError(v.mark, key_path,
                      "expected a label of at most 80 letters, digits, spaces and _.,:=+()/- "
                      "(not starting or ending with a space), got " +
                          describe(v),
                      "e.g. label: baseline");
    }
    entry.label = v.text;
    entry.label_mark = v.mark;
  }

  void apply_override(const Override& o) {
    for (MatrixAxis& axis : matrix_.spec.axes) {
      if (axis.path != o.path.text) continue;
      // Pin the axis: a list replaces its values, anything else is its only value.
      axis.values.clear();
      axis.pinned = true;
      axis.mark = o.value.mark;
      const YNode& v = *pinned_.emplace_back(std::make_unique<YNode>(o.value));
      if (v.is_sequence()) {
        for (std::size_t i = 0; i < v.items.size(); ++i) {
          axis.values.push_back(
              cell(o.path, v.items[i], o.path.text + "[" + std::to_string(i) + "]"));
        }
      } else {
        axis.values.push_back(cell(o.path, v, o.path.text));
      }
      return;
    }
    // A key under a matrix path (`data.image_size` while `data` is an axis or include key)
    // would be replaced by the matrix value if applied to base: apply it after the matrix
    // values instead, so the override always takes effect.
    for (const auto& [path, unused] : matrix_.paths) {
      if (o.path.text.size() > path.size() && o.path.text.compare(0, path.size(), path) == 0 &&
          o.path.text[path.size()] == '.') {
        late_overrides_.push_back(o);
        return;
      }
    }
    apply_setting(base_, o.path, o.value, o.path.text, catalog_);
  }

  [[noreturn]] void too_many(std::size_t configs, bool before_exclude, std::int64_t repeats) {
    std::size_t runs =
        configs > std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(repeats)
            ? std::numeric_limits<std::size_t>::max()
            : configs * static_cast<std::size_t>(repeats);
    std::string what = std::to_string(runs) + " runs (" + std::to_string(configs) +
                       " configurations" + (before_exclude ? " before exclude" : "") + " x " +
                       std::to_string(repeats) + " repeats)";
    throw PlanError(matrix_.present ? matrix_.spec.mark : base_mark_,
                    matrix_.present ? "matrix" : "base.repeat",
                    "the plan has " + what + ", more than the limit of " +
                        std::to_string(opts_.max_runs) + "; raise it with --max-runs");
  }

  void expand(Plan& plan) {
    const std::int64_t repeats = repeat_count(base_);
    const std::size_t limit = opts_.max_runs / static_cast<std::size_t>(repeats);
    MatrixExpansion ex;
    if (matrix_.present) {
      ex = expand_matrix(matrix_.spec, limit);
    } else {
      ex.count = 1;
      ex.over_limit = limit < 1;
      ex.combinations.emplace_back();
    }
    if (ex.over_limit) too_many(ex.count, ex.counted_before_exclude, repeats);

    // Axes: the matrix's, then keys that only include entries add, in file order.
    for (const MatrixAxis& axis : matrix_.spec.axes) {
      plan.axes.push_back(axis.path);
      plan.axis_marks.emplace(axis.path, axis.mark);
    }
    for (const MatrixEntry& e : matrix_.spec.include) {
      for (const MatrixPair& p : e.pairs) {
        if (std::find(plan.axes.begin(), plan.axes.end(), p.path) == plan.axes.end()) {
          plan.axes.push_back(p.path);
        }
        plan.axis_marks.emplace(p.path, p.key_mark);  // kept: the first place only
      }
    }

    std::vector<Draft> drafts;
    std::vector<const MatrixCombination*> kept;  // the combination of each configuration
    std::vector<RunSpec> configs;
    std::map<std::string, std::size_t> by_hash;
    std::vector<PlanError> problems;
    std::set<std::string> seen;  // one report of a problem many configurations share
    FileDigests digests;         // each script or model file read once, not per combination
    for (std::size_t i = 0; i < ex.combinations.size(); ++i) {
      const MatrixCombination& combo = ex.combinations[i];
      Draft draft = base_;
      // Shorter paths first (stable), so `precision` is chosen before `precision.dtype`.
      std::vector<std::pair<std::string, const MatrixCell*>> order = combo.values;
      std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
        return matrix_.paths.at(a.first).depth() < matrix_.paths.at(b.first).depth();
      });
      for (const auto& [path, c] : order) {
        apply_setting(draft, matrix_.paths.at(path), *c->node, c->key_path, catalog_);
      }
      for (const Override& o : late_overrides_) {
        apply_setting(draft, o.path, o.value, o.path.text, catalog_);
      }
      RunSpec run =
          resolve_run(draft, catalog_, base_mark_, digests, experiment_dir_);  // hashes it too
      run.config["repeat"] = repeats;
      auto [it, fresh] = by_hash.emplace(run.hash, i);
      // A script run has no model, precision, ... and a built-in run no args
      // (workload_config.h): combinations that differ only there are one configuration.
      if (!fresh && (run.workload.is_script() || draft.values.contains("args"))) continue;
      if (!fresh) {
        throw PlanError(matrix_.spec.mark, "matrix",
                        "combinations " + describe_combo(ex.combinations[it->second]) + " and " +
                            describe_combo(combo) + " resolve to the same configuration");
      }
      for (PlanError& e : check_configuration(draft, run, catalog_, opts_.machine, base_mark_)) {
        if (seen.insert(e.what()).second) problems.push_back(std::move(e));
      }
      drafts.push_back(std::move(draft));
      kept.push_back(&combo);
      configs.push_back(std::move(run));
    }
    if (!problems.empty()) {
      std::stable_sort(problems.begin(), problems.end(),
                       [](const PlanError& a, const PlanError& b) {
                         return std::tie(a.line, a.col) < std::tie(b.line, b.col);
                       });
      throw PlanErrors(std::move(problems));
    }

    for (std::size_t i = 0; i < configs.size(); ++i) {
      for (const std::string& axis : plan.axes) {
        configs[i].swept[axis] = render_setting(drafts[i], configs[i], matrix_.paths.at(axis));
      }
    }
    std::vector<std::string> names =
        plan_run_names(plan.axes, matrix_.paths, drafts, configs, plan.name);
    apply_labels(kept, names);

    for (std::size_t i = 0; i < configs.size(); ++i) {
      configs[i].name = names[i];
      configs[i].experiment = plan.name;
      for (std::int64_t r = 0; r < repeats; ++r) {
        RunSpec run = configs[i];
        run.repeat = static_cast<int>(r);
        plan.runs.push_back(std::move(run));
      }
    }
  }

  static std::string describe_combo(const MatrixCombination& c) {
    std::string out;
    for (const auto& [path, cell] : c.values) {
      out += (out.empty() ? "" : ", ") + path + "=" + written_form(*cell);
    }
    return "(" + out + ")";
  }

  const SchemaCatalog& catalog_;
  const PlanOptions& opts_;
  YNode root_;
  Draft base_;
  SourceMark base_mark_;
  ParsedMatrix matrix_;
  std::string experiment_dir_;  // a script workload's relative path is looked for here first
  std::vector<std::unique_ptr<YNode>> pinned_;  // override values that matrix cells point into
  std::vector<Override> late_overrides_;        // applied after each combination's values
};

}  // namespace

Plan make_plan_from_string(const std::string& yaml, const std::string& display_path,
                           const SchemaCatalog& catalog, const PlanOptions& opts) {
  return Planner(catalog, opts).plan(yaml, display_path);
}

Plan make_plan(const std::string& path, const SchemaCatalog& catalog, const PlanOptions& opts) {
  return make_plan_from_string(read_experiment_file(path), path, catalog, opts);
}

}  // namespace orch
