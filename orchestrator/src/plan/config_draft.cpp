// Applying written values to a Draft and resolving it (see config_draft.h).
#include "plan/config_draft.h"

#include <cmath>
#include <filesystem>

#include "plan/config_hash.h"
#include "plan/content_hash.h"
#include "plan/did_you_mean.h"
#include "plan/plan_error.h"
#include "plan/run_spec_json.h"
#include "plan/scalars.h"
#include "plan/workload_config.h"
#include "result/json_dump.h"

namespace orch {

namespace {

using nlohmann::json;

json parse_group(const KeySpec& key, const YNode& node, const std::string& key_path) {
  if (!node.is_mapping()) {
    throw PlanError(node.mark, key_path, "expected a mapping, got " + describe(node),
                    join(key.field_names()));
  }
  json out = json::object();
  PlanErrorList problems;  // every bad field of the mapping, not only the first
  for (const YEntry& e : node.entries) {
    problems.attempt([&] {
      const FieldSpec* f = key.find_field(e.key);
      if (!f && key.open_fields) {
        throw PlanError(e.key_mark, key_path + "." + e.key,
                        "'" + e.key + "' is not a valid name in '" + key.name +
                            "' (letters, digits, '_' and '-')",
                        kArgNamePattern);
      }
      if (!f) {
        throw PlanError(e.key_mark, key_path + "." + e.key,
                        unknown_with_suggestion("key", e.key, key.field_names()),
                        join(key.field_names()));
      }
      out[e.key] = f->normalise(e.value, key_path + "." + e.key);
    });
  }
  problems.throw_if_any();
  return out;
}

const PluginInfo& current_plugin(const Draft& draft, const KeySpec& key,
                                 const SchemaCatalog& catalog, const SourceMark& at,
                                 const std::string& key_path) {
  auto it = draft.choices.find(key.name);
  if (it != draft.choices.end()) return *it->second.info;
  return *default_choice(catalog, key.role, at, key_path).info;
}

std::string render_json(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_number_integer()) return std::to_string(j.get<std::int64_t>());
  if (j.is_number_float()) return number_text(j.get<double>());
  return json_dump(j);
}

std::string render_duration(double seconds) {
  if (std::floor(seconds) == seconds) {
    auto s = static_cast<std::int64_t>(seconds);
    if (s % 3600 == 0) return std::to_string(s / 3600) + "h";
    if (s % 60 == 0) return std::to_string(s / 60) + "m";
    return std::to_string(s) + "s";
  }
  return number_text(seconds) + "s";
}

// Records where `path` and, for a mapping, each of its entries were written; a whole role or
// group forgets the places of its earlier parts.
void note_written(Draft& draft, const SettingPath& path, const YNode& value,
                  const std::string& key_path) {
  if (path.sub.empty()) {
    const std::string prefix = path.key->name + ".";
    for (auto it = draft.written.lower_bound(prefix);
         it != draft.written.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
      it = draft.written.erase(it);
    }
    if (value.is_mapping()) {
      for (const YEntry& e : value.entries) {
        draft.written[prefix + e.key] = WrittenAt{e.value.mark, key_path + "." + e.key};
      }
    }
    draft.written[path.key->name] = WrittenAt{value.mark, key_path};
  } else {
    draft.written[path.key->name + "." + path.sub] = WrittenAt{value.mark, key_path};
  }
}

}  // namespace

void apply_setting(Draft& draft, const SettingPath& path, const YNode& value,
                   const std::string& key_path, const SchemaCatalog& catalog) {
  const KeySpec& key = *path.key;
  note_written(draft, path, value, key_path);
  switch (key.kind) {
    case KeyKind::kPlugin:
      if (path.sub.empty()) {
        draft.choices[key.name] = parse_plugin_choice(value, key.role, key_path, catalog);
      } else {
        const PluginInfo& info = current_plugin(draft, key, catalog, value.mark, key_path);
        const ParamSpec& spec = require_param(info, path.sub, value.mark, key_path);
        Value v = parse_param_value(spec, value, key_path);
        DraftChoice& choice = draft.choices[key.name];
        if (!choice.info) choice = DraftChoice{info.name, &info, {}};
        choice.explicit_params[path.sub] = std::move(v);
      }
      return;
    case KeyKind::kScalar:
      draft.values[key.name] = key.scalar.normalise(value, key_path);
      return;
    case KeyKind::kGroup:
      if (path.sub.empty()) {
        draft.values[key.name] = parse_group(key, value, key_path);
      } else {
        json& group = draft.values[key.name];
        if (!group.is_object()) group = json::object();
        group[path.sub] = key.find_field(path.sub)->normalise(value, key_path);
      }
      return;
  }
}

void apply_base(Draft& draft, const YNode& base, const SchemaCatalog& catalog) {
  PlanErrorList problems;  // each key is checked on its own: all their problems are reported
  for (const YEntry& e : base.entries) {
    problems.attempt([&] {
      const std::string key_path = "base." + e.key;
      const KeySpec* key = find_experiment_key(e.key);
      if (!key) {
        std::string msg = unknown_with_suggestion("key", e.key, experiment_key_names());
        if (e.key.find('.') != std::string::npos) {
          msg += "; dotted paths are for matrix axes and overrides, write nested mappings in base";
        }
        throw PlanError(e.key_mark, key_path, msg, join(experiment_key_names()));
      }
      SettingPath path{e.key, key, ""};
      apply_setting(draft, path, e.value, key_path, catalog);
    });
  }
  problems.throw_if_any();
}

json canonical_setting(const SettingPath& path, const YNode& value, const std::string& key_path,
                       const SchemaCatalog& catalog) {
  const KeySpec& key = *path.key;
  switch (key.kind) {
    case KeyKind::kPlugin: {
      if (!path.sub.empty()) return generic_json(value);
      const PluginChoice c =
          resolve_choice(parse_plugin_choice(value, key.role, key_path, catalog));
      return choice_json(c.plugin, c.params);
    }
    case KeyKind::kScalar:
      return key.scalar.normalise(value, key_path);
    case KeyKind::kGroup:
      if (!path.sub.empty()) return key.find_field(path.sub)->normalise(value, key_path);
      {
        json g = key.field_defaults();
        g.update(parse_group(key, value, key_path));
        return g;
      }
  }
  return nullptr;
}

// A parameter declared hash_file_content names a file whose bytes belong to the configuration:
// their digest sits beside the parameters ({plugin, params, content_xxh128: {param: hex}}), so
// the hash covers it, and a plan revision's difference names the file that changed.
static void add_file_digests(const std::vector<ParamSpec>& specs, const Params& params,
                             json& choice, FileDigests& digests) {
  for (const ParamSpec& p : specs) {
    if (!p.hash_file_content || !params.has(p.name)) continue;
    const auto* path = std::get_if<std::string>(&params.at(p.name));
    if (!path || path->empty()) continue;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*path, ec)) continue;
    if (const auto digest = digests.of(*path)) choice["content_xxh128"][p.name] = *digest;
  }
}

ResolvedRun resolve_run(const Draft& draft, const SchemaCatalog& catalog, const SourceMark& where,
                        FileDigests& digests, const std::string& experiment_dir) {
  ResolvedRun out;
  json& config = out.config;
  config = json::object();
  std::vector<json::json_pointer> unhashed;  // later-added parameters at their default
  // A script run has no plugins (workload_config.h): none need to be known, not even the
  // default ones, so a script-only experiment plans without any plugin library.
  const bool script = draft.values.contains("workload") &&
                      draft.values.at("workload").value("kind", "builtin") == "script";
  for (const KeySpec& key : experiment_keys()) {
    switch (key.kind) {
      case KeyKind::kPlugin: {
        if (script) break;
        auto it = draft.choices.find(key.name);
        const DraftChoice drafted =
            it != draft.choices.end()
                ? it->second
                : default_choice(catalog, key.role, where, "base." + key.name);
        const PluginChoice choice = resolve_choice(drafted);
        for (const ParamSpec& p : drafted.info->params) {
          if (p.hash_exempt_at_default() && choice.params.at(p.name) == p.default_value)
            unhashed.emplace_back("/" + key.name + "/params/" + p.name);
        }
        config[key.name] = choice_json(choice.plugin, choice.params);
        add_file_digests(drafted.info->params, choice.params, config[key.name], digests);
        break;
      }
      case KeyKind::kScalar:
        config[key.name] =
            draft.values.contains(key.name) ? draft.values.at(key.name) : key.scalar.default_value;
        break;
      case KeyKind::kGroup: {
        json g = key.field_defaults();
        if (draft.values.contains(key.name)) g.update(draft.values.at(key.name));
        config[key.name] = g;
        break;
      }
    }
  }
  resolve_workload(draft, config, experiment_dir, where, digests);
  out.run.hash = config_hash(config, unhashed);
  // The typed fields are read back from the configuration, exactly as a child process does.
  set_run_config(out.run, config);
  return out;
}

std::int64_t repeat_count(const Draft& draft) {
  if (draft.values.contains("repeat")) return draft.values.at("repeat").get<std::int64_t>();
  return find_experiment_key("repeat")->scalar.default_value.get<std::int64_t>();
}

std::string render_setting(const Draft& draft, const json& config, const SettingPath& path,
                           const std::set<std::string>* shown_params) {
  const KeySpec& key = *path.key;
  // A key the run's workload has no use for (workload_config.h): a built-in run's workload is
  // the default one, a script run has no model, precision, ...
  if (!config.contains(key.name)) {
    if (key.name == "workload")
      return render_json(key.field_defaults().at(path.sub.empty() ? "kind" : path.sub));
    return "-";
  }
  const json& resolved = config.at(key.name);
  switch (key.kind) {
    case KeyKind::kPlugin: {
      if (!path.sub.empty()) {
        // Empty where the chosen plugin lacks the parameter (an include set it elsewhere).
        const json& params = resolved.at("params");
        return params.contains(path.sub) ? render_json(params.at(path.sub)) : "";
      }
      std::string out = resolved.at("plugin").get<std::string>();
      auto it = draft.choices.find(key.name);
      if (it == draft.choices.end()) return out;
      if (shown_params) {
        const json& params = resolved.at("params");
        for (const ParamSpec& spec : it->second.info->params) {
          if (shown_params->count(spec.name) && params.contains(spec.name))
            out += "-" + render_json(params.at(spec.name));
        }
        return out;
      }
      // Explicit parameters in the order the plugin declares them.
      for (const ParamSpec& spec : it->second.info->params) {
        auto p = it->second.explicit_params.find(spec.name);
        if (p != it->second.explicit_params.end()) out += "-" + value_text(p->second);
      }
      return out;
    }
    case KeyKind::kScalar:
      if (key.name == "timeout") return render_duration(resolved.get<double>());
      return render_json(resolved);
    case KeyKind::kGroup: {
      if (!path.sub.empty())
        return resolved.contains(path.sub) ? render_json(resolved.at(path.sub)) : "-";
      std::string out;
      if (key.open_fields && resolved.is_object()) {
        for (const auto& [name, v] : resolved.items()) {
          out += (out.empty() ? "" : ",") + name + "=" + render_json(v);
        }
      } else if (draft.values.contains(key.name)) {
        for (const FieldSpec& f : key.fields) {
          const json& g = draft.values.at(key.name);
          if (!g.contains(f.name)) continue;
          if (!out.empty()) out += ",";
          out += f.name + "=" + render_json(g.at(f.name));
        }
      }
      return out.empty() ? "defaults" : out;
    }
  }
  return "";
}

}  // namespace orch
