// The keys an experiment's `base` (and matrix axes, include entries and overrides) may set:
// their kind, how a written value is checked and normalised, and their defaults.
//
// This is the one table of the experiment file's own keys. Plugin parameters are not here:
// they come from the plugins' schemas at plan time. The four default plugin names are the only
// plugin names the planner knows, and only as defaults for a role the file leaves out.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "orch/plugin.h"
#include "plan/yaml_tree.h"

namespace orch {

/// The most steps `profile.steps` may ask for (see experiment_schema.cpp).
constexpr std::int64_t kMaxProfileSteps = 100;

enum class KeyKind {
  kPlugin,  ///< a plugin role: `precision: amp` or `{plugin: amp, dtype: bf16}`
  kScalar,  ///< one value: `batch_size: 256`
  kGroup,   ///< a small fixed mapping: `optimizer: {lr: 0.1}`
};

/// Checks a written value and returns its canonical JSON (e.g. `on` -> "on", `30m` -> 1800.0).
/// Throws PlanError pointing at the node.
using Normaliser = nlohmann::json (*)(const YNode& node, const std::string& key_path);

struct FieldSpec {
  std::string name;
  Normaliser normalise = nullptr;
  nlohmann::json default_value;
  std::string allowed;  ///< for messages and the docs
};

struct KeySpec {
  std::string name;
  KeyKind kind = KeyKind::kScalar;
  PluginKind role = PluginKind::kModel;  ///< kPlugin
  std::string default_plugin;            ///< kPlugin
  FieldSpec scalar;                      ///< kScalar (scalar.name == name)
  std::vector<FieldSpec> fields;         ///< kGroup
  bool sweepable = true;                 ///< false: may not vary between configurations
  /// kGroup whose field names are the user's (`args`): any name matching kArgNamePattern, each
  /// a scalar; `fields` is empty.
  bool open_fields = false;

  const FieldSpec* find_field(std::string_view field) const;
  std::vector<std::string> field_names() const;
  /// kGroup: every field at its default, what an unwritten field resolves to.
  nlohmann::json field_defaults() const;
};

/// The names an open group (`args`) accepts.
constexpr const char* kArgNamePattern = "[A-Za-z0-9_-]+";
bool valid_arg_name(std::string_view name);

/// The keys only orch's built-in trainer reads: left out of a script run's configuration.
bool builtin_only_key(std::string_view name);

/// The keys of `base`, in the order the docs list them.
const std::vector<KeySpec>& experiment_keys();
const KeySpec* find_experiment_key(std::string_view name);
std::vector<std::string> experiment_key_names();

/// A validated dotted path naming what a matrix axis, include entry or override sets:
/// `batch_size`, `precision`, `precision.dtype`, `optimizer.lr`.
struct SettingPath {
  std::string text;
  const KeySpec* key = nullptr;
  std::string sub;  ///< plugin parameter or group field; empty when the whole key is set

  /// Shorter paths are applied first, so `precision` is chosen before `precision.dtype` is set.
  int depth() const { return sub.empty() ? 1 : 2; }
};

/// Validates `text`; plugin parameter names are checked later, against the plugin chosen at
/// that point. `varying` is true for matrix axes and include keys (where keys that are not
/// sweepable, `repeat` and `timeout`, are refused).
SettingPath parse_setting_path(const std::string& text, const SourceMark& at,
                               const std::string& key_path, bool varying);

}  // namespace orch
