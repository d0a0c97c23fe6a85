// Plugin choices in an experiment file (`precision: amp`, `model: {plugin: resnet, depth: 50}`)
// checked against the plugins' declared parameter schemas (orch/params.h).
//
// Nothing here knows any plugin by name: everything comes from the SchemaCatalog.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "orch/params.h"
#include "orch/plugin.h"
#include "plan/run_spec.h"
#include "plan/yaml_tree.h"

namespace orch {

/// A plugin role as written so far: the plugin, and only the parameters set explicitly (the
/// run name shows those; defaults are filled in when the configuration is resolved).
struct DraftChoice {
  std::string plugin;
  const PluginInfo* info = nullptr;
  std::map<std::string, Value> explicit_params;
};

/// The plugin `name` of `kind`, or a PlanError listing the known ones. `is_default` says the
/// name was not written by the user but is the role's default.
const PluginInfo& require_plugin(const SchemaCatalog& catalog, PluginKind kind,
                                 const std::string& name, const SourceMark& at,
                                 const std::string& key_path, bool is_default = false);

/// The declared parameter `name` of `info`, or a PlanError with a suggestion.
const ParamSpec& require_param(const PluginInfo& info, const std::string& name,
                               const SourceMark& at, const std::string& key_path);

/// The node as a value of the parameter's type, inside its allowed set and bounds.
Value parse_param_value(const ParamSpec& spec, const YNode& node, const std::string& key_path);

/// `name` or `{plugin: name, param: value, ...}`; a mapping without `plugin` means the role's
/// default plugin.
DraftChoice parse_plugin_choice(const YNode& node, PluginKind kind, const std::string& key_path,
                                const SchemaCatalog& catalog);

/// The one place a role's default plugin is chosen (what the experiment schema names for the
/// role): what a role the experiment leaves out, or a mapping without `plugin`, stands for,
/// with no parameter set. A PlanError at `at` when it is not installed.
DraftChoice default_choice(const SchemaCatalog& catalog, PluginKind kind, const SourceMark& at,
                           const std::string& key_path);

/// Every declared parameter: the explicit value where set, else the default.
Params resolve_params(const PluginInfo& info, const std::map<std::string, Value>& explicit_params);

/// The choice as a run gets it, every declared default filled in (resolve_params): what the
/// planner, the matrix comparison and `orch dataset` all resolve a choice with.
PluginChoice resolve_choice(const DraftChoice& choice);

nlohmann::json value_json(const Value& v);
/// {"plugin": name, "params": {...}}: how a resolved choice appears in RunSpec::config.
nlohmann::json choice_json(const std::string& plugin, const Params& params);

/// What a parameter accepts, for the "(allowed: ...)" part of messages.
std::string allowed_text(const ParamSpec& spec);

}  // namespace orch
