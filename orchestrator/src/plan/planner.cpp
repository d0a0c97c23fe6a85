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
#include "plan/halving_schedule.h"
#include "plan/matrix.h"
#include "plan/matrix_reader.h"
#include "plan/overrides.h"
#include "plan/plan_memory.h"
#include "plan/plan_merges.h"
#include "plan/plan_names.h"
#include "plan/scalars.h"
#include "plan/search_spec.h"
#include "plan/yaml_tree.h"
#include "result/json_dump.h"

namespace orch {

namespace {

using json = nlohmann::json;

// The estimate's configuration size where the base alone does not resolve: more than a
// built-in run's (about 1.2 KiB with the shipped plugins) or a script run's.
constexpr std::uint64_t kUnresolvedConfigBytes = 4096;

const std::vector<std::string> kTopLevelKeys = {"name",   "description", "base",
                                                "matrix", "baseline",    "search"};

// The distinct configurations of a plan's combinations, before they are named; index i of each
// vector is configuration i. Past their checks, only the axes' keys are kept of each draft and
// resolved tree: all that the names and the table read of a configuration.
struct Configurations {
  ConfigurationCombos combos;
  std::vector<Draft> drafts;
  std::vector<json> shown;  // each configuration's resolved values at the axes' keys
  std::vector<RunSpec> runs;
  std::map<std::string, std::size_t> by_hash;  // configuration hash -> index
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
    for (const std::string& text : opts_.overrides) {
      errors_.attempt([&] { apply_override(parse_override(text)); });
    }
    // Every problem of the file and the overrides, together; expanding a matrix whose values
    // were refused would only report their consequences.
    errors_.throw_if_any();
    expand(plan);
    check_baseline(plan);
    if (plan.search.halving()) {
      const std::string note = halving_schedule(plan).note;
      if (!note.empty()) plan.notes.push_back(note);
    }
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
      // The name has its own check, and the description is not part of any configuration.
      if (e.key != "name" && e.key != "description") {
        errors_.attempt([&] { require_utf8(e.value, e.key); });
      }
      if (e.key == "name") {
        name = &e.value;
      } else if (e.key == "description") {
        if (!e.value.is_null() && !e.value.is_scalar()) {
          errors_.add(
              PlanError(e.value.mark, "description", "expected text, got " + describe(e.value)));
        }
        plan.description = e.value.text;
      } else if (e.key == "baseline") {
        if (!e.value.is_scalar() || e.value.text.empty()) {
          errors_.add(PlanError(e.value.mark, "baseline",
                                "expected a configuration's name, got " + describe(e.value)));
        }
        plan.baseline = e.value.text;
        baseline_mark_ = e.value.mark;
      } else if (e.key == "search") {
        errors_.attempt([&] { plan.search = parse_search(e.value); });
      } else if (e.key == "base") {
        base = &e.value;
      } else if (e.key == "matrix") {
        matrix = &e;
      } else if (find_experiment_key(e.key)) {
        errors_.add(PlanError(e.key_mark, e.key, "'" + e.key + "' belongs under 'base:'",
                              join(kTopLevelKeys)));
      } else {
        errors_.add(PlanError(e.key_mark, e.key,
                              unknown_with_suggestion("key", e.key, kTopLevelKeys),
                              join(kTopLevelKeys)));
      }
    }
    read_name(name, plan);
    read_base(base);
    if (matrix) errors_.attempt([&] { read_matrix(*matrix, catalog_, errors_, matrix_); });
  }

  void read_name(const YNode* name, Plan& plan) {
    static const std::regex kName(R"([A-Za-z0-9_.-]+)");
    if (!name) {
      errors_.add(PlanError(root_.mark, "name", "missing required key 'name'", "[A-Za-z0-9_.-]+"));
    } else if (!name->is_scalar() || !std::regex_match(name->text, kName)) {
      errors_.add(
          PlanError(name->mark, "name",
                    "expected a name of letters, digits, '_', '.' and '-', got " + describe(*name),
                    "[A-Za-z0-9_.-]+"));
    } else {
      plan.name = name->text;
    }
  }

  void read_base(const YNode* base) {
    base_mark_ = base ? base->mark : root_.mark;
    if (base && !base->is_null() && !base->is_mapping()) {
      errors_.add(PlanError(base->mark, "base", "expected a mapping, got " + describe(*base),
                            join(experiment_key_names())));
    } else if (base) {
      errors_.attempt([&] { apply_base(base_, *base, catalog_); });
    }
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
          axis.values.push_back(matrix_cell(o.path, v.items[i],
                                            o.path.text + "[" + std::to_string(i) + "]", catalog_));
        }
      } else {
        axis.values.push_back(matrix_cell(o.path, v, o.path.text, catalog_));
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

  // Counts saturate at the largest size_t (matrix_size does, and so does runs_of): such a
  // count is said as what it is, at least 2^64, not as that one number.
  static std::string count_text(std::size_t n) {
    return n == std::numeric_limits<std::size_t>::max() ? "2^64 or more" : std::to_string(n);
  }
  static std::size_t runs_of(std::size_t configs, std::int64_t repeats) {
    const auto r = static_cast<std::size_t>(repeats);
    return configs > std::numeric_limits<std::size_t>::max() / r
               ? std::numeric_limits<std::size_t>::max()
               : configs * r;
  }
  static std::string runs_text(std::size_t configs, bool before_exclude, std::int64_t repeats) {
    return count_text(runs_of(configs, repeats)) + " runs (" + count_text(configs) +
           " configurations" + (before_exclude ? " before exclude" : "") + " x " +
           std::to_string(repeats) + " repeats)";
  }

  [[noreturn]] void too_many(std::size_t configs, bool before_exclude, std::int64_t repeats) {
    throw PlanError(matrix_.present ? matrix_.spec.mark : base_mark_,
                    matrix_.present ? "matrix" : "base.repeat",
                    "the plan has " + runs_text(configs, before_exclude, repeats) +
                        ", more than the limit of " + std::to_string(opts_.max_runs) +
                        "; raise it with --max-runs");
  }

  // --max-runs may be as large as the count itself, so `runs` saturates here too.
  [[noreturn]] void too_big_for_memory(std::size_t configs, bool before_exclude,
                                       std::int64_t repeats, std::uint64_t per_run,
                                       std::uint64_t memory) {
    const std::size_t runs = runs_of(configs, repeats);
    constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t needs = runs > kMax / per_run ? kMax : runs * per_run;
    const std::size_t fit = runs_that_fit(memory, per_run);
    throw PlanError(
        matrix_.present ? matrix_.spec.mark : base_mark_, matrix_.present ? "matrix" : "base",
        "the plan has " + runs_text(configs, before_exclude, repeats) + ": building it needs " +
            approximate_size(needs) + " of memory (" + approximate_size(per_run) +
            " a run), and this process can allocate " + approximate_size(memory) +
            " (the least of the system's available memory, ulimit -v and ulimit -d), of which a "
            "plan may take half: about " +
            std::to_string(fit) +
            " runs. Plan fewer runs: narrow the matrix, or split it into several experiment "
            "files of at most " +
            std::to_string(fit) + " runs each (and keep --max-runs at most that)");
  }

  // At most how long a configuration's JSON text is: the base's, resolved (every default filled
  // in), plus the longest value of each matrix axis and include key, which replaces a setting
  // of the base or adds one. Read before the matrix is expanded, for the plan's estimate.
  std::uint64_t config_bytes_bound(FileDigests& digests) const {
    std::uint64_t bytes = 0;
    try {
      bytes = resolve_run(base_, catalog_, base_mark_, digests, experiment_dir_)
                  .run.config.text()
                  .size();
    } catch (const PlanError&) {
      // A base that resolves only with the matrix's values (a script's command set by an
      // axis): the combinations say what is wrong, if anything is; this is the estimate's.
      bytes = kUnresolvedConfigBytes;
    }
    std::map<std::string, std::uint64_t> longest;
    auto note = [&](const std::string& path, const json& value) {
      std::uint64_t& l = longest[path];
      l = std::max<std::uint64_t>(l, json_dump(value).size());
    };
    for (const MatrixAxis& axis : matrix_.spec.axes) {
      for (const MatrixCell& cell : axis.values) note(axis.path, cell.value);
    }
    for (const MatrixEntry& e : matrix_.spec.include) {
      for (const MatrixPair& p : e.pairs) note(p.path, p.cell.value);
    }
    for (const auto& [path, l] : longest) bytes += path.size() + l;
    return bytes;
  }

  // `baseline:` must name a configuration the plan has: a misspelt one would silently fall back
  // to comparing with the slowest.
  void check_baseline(const Plan& plan) const {
    if (plan.baseline.empty()) return;
    std::vector<std::string> names;
    for (const RunSpec& r : plan.runs) {
      if (r.name == plan.baseline) return;
      if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
    }
    throw PlanError(baseline_mark_, "baseline",
                    unknown_with_suggestion("configuration", plan.baseline, names), join(names));
  }

  void expand(Plan& plan) {
    const std::int64_t repeats = repeat_count(base_);
    FileDigests digests;  // each script or model file read once, not per combination
    const MatrixExpansion ex = expand_within_limits(repeats, digests);
    collect_axes(plan);
    Configurations c = resolve_configurations(ex, axis_keys(plan.axes), digests);
    set_swept(plan.axes, c);
    std::vector<std::string> names = plan_run_names(plan.axes, matrix_.paths, c.drafts, c.shown,
                                                    include_only_unset(plan.axes, c), plan.name);
    apply_labels(c.combos.kept, names);
    note_merges(ex.combinations.size(), c.combos, names, plan);

    // What only naming needed goes before the runs are made: the plan is never held twice.
    c.drafts = {};
    c.shown = {};
    c.by_hash = {};
    add_runs(c.runs, names, repeats, plan);
  }

  // Expanding no more than memory could hold: a plan too big for it fails here, with exit 2,
  // before it is built, not in the allocator halfway.
  MatrixExpansion expand_within_limits(std::int64_t repeats, FileDigests& digests) {
    const std::size_t by_max_runs = opts_.max_runs / static_cast<std::size_t>(repeats);
    const std::optional<std::uint64_t> memory =
        opts_.allocatable_bytes ? opts_.allocatable_bytes : allocatable_bytes();
    const std::uint64_t per_run = plan_bytes_per_run(config_bytes_bound(digests));
    const std::size_t by_memory =
        memory ? runs_that_fit(*memory, per_run) / static_cast<std::size_t>(repeats) : by_max_runs;
    const std::size_t limit = std::min(by_max_runs, by_memory);
    MatrixExpansion ex;
    if (matrix_.present) {
      ex = expand_matrix(matrix_.spec, limit);
    } else {
      ex.count = 1;
      ex.over_limit = limit < 1;
      ex.combinations.emplace_back();
    }
    if (ex.over_limit && ex.count > by_max_runs)
      too_many(ex.count, ex.counted_before_exclude, repeats);
    if (ex.over_limit)
      too_big_for_memory(ex.count, ex.counted_before_exclude, repeats, per_run, memory.value_or(0));
    return ex;
  }

  // Axes: the matrix's, then keys that only include entries add, in file order.
  void collect_axes(Plan& plan) const {
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
  }

  // The experiment keys the axes set: all that the names and the table read of a
  // configuration past its checks, so a plan of many runs holds little more than its RunSpecs.
  std::set<std::string> axis_keys(const std::vector<std::string>& axes) const {
    std::set<std::string> keys;
    for (const std::string& axis : axes) keys.insert(matrix_.paths.at(axis).key->name);
    return keys;
  }

  Configurations resolve_configurations(const MatrixExpansion& ex,
                                        const std::set<std::string>& keys, FileDigests& digests) {
    Configurations c;
    PlanErrorList problems;  // every combination's, each problem many share reported once
    for (const MatrixCombination& combo : ex.combinations) {
      problems.attempt([&] { add_configuration(combo, keys, digests, c, problems); });
    }
    check_lost_axes(matrix_.spec, matrix_.paths, c.combos, c.shown, problems);
    problems.throw_if_any();
    return c;
  }

  // The base with the combination's values applied, then the overrides that must follow them.
  Draft combination_draft(const MatrixCombination& combo) const {
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
    return draft;
  }

  // Resolves and checks the combination as a new configuration, or merges it into the earlier
  // one it resolves to.
  void add_configuration(const MatrixCombination& combo, const std::set<std::string>& keys,
                         FileDigests& digests, Configurations& c, PlanErrorList& problems) {
    Draft draft = combination_draft(combo);
    // Hashed too; `repeat` may not vary, so each configuration's is the base's.
    ResolvedRun resolved = resolve_run(draft, catalog_, base_mark_, digests, experiment_dir_);
    RunSpec& run = resolved.run;
    if (auto it = c.by_hash.find(run.hash); it != c.by_hash.end()) {
      // A script run has no model, precision, ... and a built-in run no args
      // (workload_config.h): combinations that differ only there are one configuration,
      // said under the table (or refused by check_lost_axes, when an axis is thereby lost).
      if (run.workload.is_script() || draft.values.contains("args")) {
        c.combos.merged[it->second].push_back(&combo);
        return;
      }
      throw PlanError(matrix_.spec.mark, "matrix",
                      "combinations " + describe_combo(*c.combos.kept[it->second]) + " and " +
                          describe_combo(combo) + " resolve to the same configuration");
    }
    for (PlanError& e :
         check_configuration(draft, resolved.config, catalog_, opts_.machine, base_mark_)) {
      problems.add(std::move(e));
    }
    c.by_hash.emplace(run.hash, c.runs.size());
    c.drafts.push_back(only_keys(std::move(draft), keys));
    c.combos.kept.push_back(&combo);
    c.shown.push_back(only_keys(resolved.config, keys));
    c.runs.push_back(std::move(run));
    c.combos.merged.emplace_back();
  }

  // A plugin axis shows the parameters any configuration sets, at each one's resolved value
  // (`amp-bf16` beside `amp-fp16`, though bf16 is amp's default and was not written).
  void set_swept(const std::vector<std::string>& axes, Configurations& c) const {
    std::map<std::string, std::set<std::string>> shown_params;
    for (const std::string& axis : axes) {
      const SettingPath& path = matrix_.paths.at(axis);
      if (path.key->kind != KeyKind::kPlugin || !path.sub.empty()) continue;
      auto& names = shown_params[axis];
      for (const Draft& d : c.drafts) {
        auto it = d.choices.find(path.key->name);
        if (it == d.choices.end()) continue;
        for (const auto& [param, value] : it->second.explicit_params) names.insert(param);
      }
    }
    for (std::size_t i = 0; i < c.runs.size(); ++i) {
      for (const std::string& axis : axes) {
        auto params = shown_params.find(axis);
        c.runs[i].swept[axis] =
            render_setting(c.drafts[i], c.shown[i], matrix_.paths.at(axis),
                           params == shown_params.end() ? nullptr : &params->second);
      }
    }
  }

  // The keys only include entries add, where no entry set them: not part of the name.
  std::vector<std::set<std::string>> include_only_unset(const std::vector<std::string>& axes,
                                                        const Configurations& c) const {
    std::vector<std::set<std::string>> unset(c.runs.size());
    for (std::size_t i = 0; i < c.runs.size(); ++i) {
      for (const std::string& axis : axes) {
        const bool matrix_axis = std::any_of(matrix_.spec.axes.begin(), matrix_.spec.axes.end(),
                                             [&](const MatrixAxis& a) { return a.path == axis; });
        if (!matrix_axis && !c.combos.kept[i]->find(axis)) unset[i].insert(axis);
      }
    }
    return unset;
  }

  // Each configuration moves into its last repeat, so the plan is never held twice.
  static void add_runs(std::vector<RunSpec>& configs, const std::vector<std::string>& names,
                       std::int64_t repeats, Plan& plan) {
    plan.runs.reserve(configs.size() * static_cast<std::size_t>(repeats));
    for (std::size_t i = 0; i < configs.size(); ++i) {
      configs[i].name = names[i];
      configs[i].experiment = plan.name;
      for (std::int64_t r = 0; r + 1 < repeats; ++r) {
        plan.runs.push_back(configs[i]);  // its configuration's text is shared, not copied
        plan.runs.back().repeat = static_cast<int>(r);
      }
      plan.runs.push_back(std::move(configs[i]));
      plan.runs.back().repeat = static_cast<int>(repeats - 1);
    }
  }

  // `draft` with only the settings of `keys` (experiment keys) left, and nothing of where they
  // were written (the checks that blame a place have run).
  static Draft only_keys(Draft draft, const std::set<std::string>& keys) {
    for (auto it = draft.choices.begin(); it != draft.choices.end();) {
      it = keys.count(it->first) ? std::next(it) : draft.choices.erase(it);
    }
    draft.values = only_keys(draft.values, keys);
    draft.written.clear();
    return draft;
  }

  // The entries of the object `config` at `keys`.
  static json only_keys(const json& config, const std::set<std::string>& keys) {
    json out = json::object();
    for (const std::string& key : keys) {
      if (auto it = config.find(key); it != config.end()) out[key] = *it;
    }
    return out;
  }

  const SchemaCatalog& catalog_;
  const PlanOptions& opts_;
  YNode root_;
  Draft base_;
  SourceMark base_mark_;
  SourceMark baseline_mark_;
  ParsedMatrix matrix_;
  std::string experiment_dir_;  // a script workload's relative path is looked for here first
  std::vector<std::unique_ptr<YNode>> pinned_;  // override values that matrix cells point into
  std::vector<Override> late_overrides_;        // applied after each combination's values
  PlanErrorList errors_;  // the file's and the overrides' problems, reported together
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
