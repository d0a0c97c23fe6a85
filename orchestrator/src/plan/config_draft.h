// One configuration under construction: base, then overrides, then matrix values are applied
// to a Draft, which is then resolved (defaults filled in) into a RunSpec.
//
// A Draft keeps only what was written, because run names show explicitly set plugin
// parameters and because "omitted" and "written as the default" must resolve identically.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "plan/content_hash.h"
#include "plan/experiment_schema.h"
#include "plan/plugin_params.h"
#include "plan/run_spec.h"
#include "plan/yaml_tree.h"

namespace orch {

/// Where a setting of a Draft was written, for problems found once it is resolved.
struct WrittenAt {
  SourceMark mark;
  std::string key_path;  ///< as errors show it: "base.data.root", "matrix.device[1]"
};

struct Draft {
  std::map<std::string, DraftChoice> choices;        ///< plugin roles set so far, by key
  nlohmann::json values = nlohmann::json::object();  ///< scalars; groups as explicit fields
  /// Setting path ("device", "data", "data.root", "optimizer.impl") -> where it was last written.
  /// Replacing a whole role or group forgets where its parts were written.
  std::map<std::string, WrittenAt> written;
};

/// Sets `path` to the written `value`, checking it. A whole plugin role or group is replaced
/// (unwritten parameters/fields go back to their defaults); a dotted path sets one parameter
/// of the plugin chosen at this point, or one field of a group.
void apply_setting(Draft& draft, const SettingPath& path, const YNode& value,
                   const std::string& key_path, const SchemaCatalog& catalog);

/// Applies every entry of the `base` mapping (keys are whole experiment keys).
void apply_base(Draft& draft, const YNode& base, const SchemaCatalog& catalog);

/// The value as matrix expansion compares it: plugin choices and groups with their defaults
/// filled in (so `amp`, `{plugin: amp}` and `{plugin: amp, dtype: bf16}` are equal when bf16
/// is amp's default), scalars normalised (`on` == `true`, `30m` == 1800), and a plugin
/// parameter given by a dotted path as plain YAML data (its plugin is not known yet).
nlohmann::json canonical_setting(const SettingPath& path, const YNode& value,
                                 const std::string& key_path, const SchemaCatalog& catalog);

/// A resolved configuration: its RunSpec, and the configuration as a tree (RunSpec::config is
/// its text), which the planner reads for its checks and run names before it keeps the text
/// alone.
struct ResolvedRun {
  RunSpec run;
  nlohmann::json config;
};

/// Fills every configuration field of a RunSpec (not name, repeat index, experiment or swept),
/// RunSpec::config and RunSpec::hash (which needs the plugins' declarations: parameters added
/// later are left out at their default). `where` is blamed if a default plugin is missing.
/// `experiment_dir` is where a script workload's relative script path is looked for first
/// (plan/workload_config.h); empty: the current directory only. `digests` reads the files
/// whose content is part of a configuration (a script, a parameter declared hash_file_content)
/// once per plan.
ResolvedRun resolve_run(const Draft& draft, const SchemaCatalog& catalog, const SourceMark& where,
                        FileDigests& digests, const std::string& experiment_dir = "");

/// The number of repeats the draft asks for.
std::int64_t repeat_count(const Draft& draft);

/// The value at `path` for tables and run names: a plugin role as its name plus explicitly set
/// parameters ("amp-bf16"), a group as its explicit fields ("lr=0.01"), anything else as its
/// resolved value ("channels_last", "256", "30m"). `config` is the resolved configuration that
/// `draft` made (at least its key at `path`). `shown_params`, for a whole plugin role, names
/// the parameters to show instead of this draft's explicit ones, each at its resolved value (so
/// `amp` shows as "amp-bf16" beside a configuration that set dtype: fp16).
std::string render_setting(const Draft& draft, const nlohmann::json& config,
                           const SettingPath& path,
                           const std::set<std::string>* shown_params = nullptr);

}  // namespace orch
