// Plugin choice parsing and parameter validation (see plugin_params.h).
#include "plan/plugin_params.h"

#include <cmath>

#include "plan/did_you_mean.h"
#include "plan/experiment_schema.h"
#include "plan/plan_error.h"
#include "plan/scalars.h"

namespace orch {

namespace {

std::string bound_text(double b, ParamType type) {
  if (type == ParamType::kInt && std::floor(b) == b) {
    return std::to_string(static_cast<std::int64_t>(b));
  }
  return number_text(b);
}

double as_double(const Value& v) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&v)) return *d;
  return 0;
}

bool same_value(const Value& a, const Value& b) {
  bool a_num = type_of(a) == ParamType::kInt || type_of(a) == ParamType::kFloat;
  bool b_num = type_of(b) == ParamType::kInt || type_of(b) == ParamType::kFloat;
  if (a_num && b_num) return as_double(a) == as_double(b);
  return a == b;
}

std::string type_phrase(ParamType t) {
  switch (t) {
    case ParamType::kBool:
      return "a bool (true or false)";
    case ParamType::kInt:
      return "an int";
    case ParamType::kFloat:
      return "a number";
    case ParamType::kString:
      return "a string";
  }
  return "?";
}

std::vector<std::string> param_names(const PluginInfo& info) {
  std::vector<std::string> names;
  for (const ParamSpec& p : info.params) names.push_back(p.name);
  return names;
}

}  // namespace

std::string allowed_text(const ParamSpec& spec) {
  if (!spec.allowed.empty()) {
    std::vector<std::string> words;
    for (const Value& v : spec.allowed) words.push_back(to_string(v));
    return join(words);
  }
  std::string t = to_string(spec.type);
  if (spec.min && spec.max) {
    return t + " from " + bound_text(*spec.min, spec.type) + " to " +
           bound_text(*spec.max, spec.type);
  }
  if (spec.min) return t + " >= " + bound_text(*spec.min, spec.type);
  if (spec.max) return t + " <= " + bound_text(*spec.max, spec.type);
  return t;
}

const PluginInfo& require_plugin(const SchemaCatalog& catalog, PluginKind kind,
                                 const std::string& name, const SourceMark& at,
                                 const std::string& key_path, bool is_default) {
  if (const PluginInfo* info = catalog.find(kind, name)) return *info;
  std::vector<std::string> known = catalog.names(kind);
  std::string role = to_string(kind);
  std::string msg;
  if (is_default) {
    msg = "no " + role + " plugin is chosen and the default, '" + name + "', is not installed";
  } else {
    msg = unknown_with_suggestion(role + " plugin", name, known);
  }
  if (known.empty()) msg += "; no " + role + " plugins are installed";
  throw PlanError(at, key_path, msg, join(known));
}

const ParamSpec& require_param(const PluginInfo& info, const std::string& name,
                               const SourceMark& at, const std::string& key_path) {
  for (const ParamSpec& p : info.params) {
    if (p.name == name) return p;
  }
  if (info.params.empty()) {
    throw PlanError(
        at, key_path,
        "plugin '" + info.name + "' takes no parameters, so '" + name + "' cannot be set");
  }
  std::vector<std::string> names = param_names(info);
  std::string msg = "plugin '" + info.name + "' has no parameter '" + name + "'";
  if (auto s = closest_word(name, names)) msg += "; did you mean '" + *s + "'?";
  throw PlanError(at, key_path, msg, join(names));
}

Value parse_param_value(const ParamSpec& spec, const YNode& node, const std::string& key_path) {
  Value v;
  bool ok = false;
  switch (spec.type) {
    case ParamType::kBool:
      if (auto b = scalar_bool(node)) v = *b, ok = true;
      break;
    case ParamType::kInt:
      if (auto i = scalar_int(node)) v = *i, ok = true;
      break;
    case ParamType::kFloat:
      // An int is accepted where a float is declared, and stored as a double so that `1` and
      // `1.0` are the same configuration.
      if (auto f = scalar_float(node)) v = *f, ok = true;
      break;
    case ParamType::kString:
      if (auto s = scalar_string(node)) v = *s, ok = true;
      break;
  }
  if (!ok) {
    throw PlanError(node.mark, key_path,
                    "expected " + type_phrase(spec.type) + ", got " + describe(node),
                    allowed_text(spec));
  }
  if (!spec.allowed.empty()) {
    bool found = false;
    for (const Value& a : spec.allowed) found = found || same_value(a, v);
    if (!found) {
      throw PlanError(node.mark, key_path, value_text(v) + " is not an allowed value",
                      allowed_text(spec));
    }
  }
  if (spec.type == ParamType::kInt || spec.type == ParamType::kFloat) {
    double d = as_double(v);
    if (spec.min && d < *spec.min) {
      throw PlanError(node.mark, key_path,
                      value_text(v) + " is below the minimum " + bound_text(*spec.min, spec.type),
                      allowed_text(spec));
    }
    if (spec.max && d > *spec.max) {
      throw PlanError(node.mark, key_path,
                      value_text(v) + " is above the maximum " + bound_text(*spec.max, spec.type),
                      allowed_text(spec));
    }
  }
  return v;
}

DraftChoice default_choice(const SchemaCatalog& catalog, PluginKind kind, const SourceMark& at,
                           const std::string& key_path) {
  for (const KeySpec& key : experiment_keys()) {
    if (key.kind != KeyKind::kPlugin || key.role != kind) continue;
    const PluginInfo& info = require_plugin(catalog, kind, key.default_plugin, at, key_path, true);
    return DraftChoice{key.default_plugin, &info, {}};
  }
  throw std::logic_error("no experiment key for the plugin role " + std::string(to_string(kind)));
}

DraftChoice parse_plugin_choice(const YNode& node, PluginKind kind, const std::string& key_path,
                                const SchemaCatalog& catalog) {
  DraftChoice out;
  if (node.is_scalar()) {
    out.plugin = node.text;
    out.info = &require_plugin(catalog, kind, out.plugin, node.mark, key_path);
    return out;
  }
  if (!node.is_mapping()) {
    throw PlanError(node.mark, key_path,
                    "expected a " + std::string(to_string(kind)) +
                        " plugin name, or a mapping with 'plugin' and its parameters, got " +
                        describe(node),
                    join(catalog.names(kind)));
  }
  if (const YNode* p = node.find("plugin")) {
    if (!p->is_scalar()) {
      throw PlanError(p->mark, key_path + ".plugin", "expected a plugin name, got " + describe(*p),
                      join(catalog.names(kind)));
    }
    out.plugin = p->text;
    out.info = &require_plugin(catalog, kind, out.plugin, p->mark, key_path + ".plugin");
  } else {
    out = default_choice(catalog, kind, node.mark, key_path);
  }
  PlanErrorList problems;  // every bad parameter of the mapping, not only the first
  for (const YEntry& e : node.entries) {
    if (e.key == "plugin") continue;
    problems.attempt([&] {
      const std::string path = key_path + "." + e.key;
      const ParamSpec& spec = require_param(*out.info, e.key, e.key_mark, path);
      out.explicit_params[e.key] = parse_param_value(spec, e.value, path);
    });
  }
  problems.throw_if_any();
  return out;
}

Params resolve_params(const PluginInfo& info, const std::map<std::string, Value>& explicit_params) {
  Params params;
  for (const ParamSpec& spec : info.params) {
    auto it = explicit_params.find(spec.name);
    Value v = it != explicit_params.end() ? it->second : spec.default_value;
    if (spec.type == ParamType::kFloat) {
      if (auto* i = std::get_if<std::int64_t>(&v)) v = static_cast<double>(*i);
    }
    params.set(spec.name, std::move(v));
  }
  return params;
}

PluginChoice resolve_choice(const DraftChoice& choice) {
  return PluginChoice{choice.info->name, resolve_params(*choice.info, choice.explicit_params)};
}

nlohmann::json value_json(const Value& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

nlohmann::json choice_json(const std::string& plugin, const Params& params) {
  nlohmann::json p = nlohmann::json::object();
  for (const auto& [name, value] : params.values()) p[name] = value_json(value);
  return nlohmann::json{{"plugin", plugin}, {"params", p}};
}

}  // namespace orch
