// Plugin parameters: the schema a plugin declares as data, and the resolved values it receives.
//
// A plugin never parses YAML. It declares each parameter (name, type, default, allowed values,
// bounds, one line of doc); the host validates the user's experiment file against that schema
// before anything runs, fills in defaults, and hands the plugin a complete, typed `Params`.
// This header is torch-free so the planner can use it without LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace orch {

enum class ParamType { kBool, kInt, kFloat, kString };

/// A parameter value. Ints are 64-bit; floats are doubles; an int is accepted where a float is
/// declared (the planner converts it), never the other way round.
using Value = std::variant<bool, std::int64_t, double, std::string>;

inline const char* to_string(ParamType t) {
  switch (t) {
    case ParamType::kBool:
      return "bool";
    case ParamType::kInt:
      return "int";
    case ParamType::kFloat:
      return "float";
    case ParamType::kString:
      return "string";
  }
  return "?";
}

inline ParamType type_of(const Value& v) { return static_cast<ParamType>(v.index()); }

/// Renders a value the way a user would write it in YAML.
std::string to_string(const Value& v);

/// One declared parameter of a plugin.
struct ParamSpec {
  std::string name;  ///< key in the experiment file, e.g. "depth"
  ParamType type = ParamType::kString;
  Value default_value;         ///< used when the experiment file does not set it
  std::vector<Value> allowed;  ///< if non-empty, the value must be one of these
  std::optional<double> min;   ///< inclusive lower bound for int/float
  std::optional<double> max;   ///< inclusive upper bound for int/float
  std::string doc;             ///< one line shown by `orch plugins`
  /// false for a parameter added after configurations were recorded: while it has its default
  /// value it is left out of the configuration hash, so those configurations keep their hash
  /// (and a sweep over an older database resumes them instead of running them again).
  bool hashed_at_default = true;
  /// For a string parameter naming a file (a model archive, say): the file's bytes are part of
  /// the configuration, as its path is, so a file rewritten at the same path makes a new
  /// configuration instead of resuming the old one's results. The planner reads the file where
  /// it plans (a relative path from the current directory); a file it cannot read there adds
  /// nothing, and the plugin's own plan check says whether that is an error.
  bool hash_file_content = false;
};

/// Resolved parameters handed to a plugin: every declared name is present with its final value.
class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, Value> values) : values_(std::move(values)) {}

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  const Value& at(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) throw std::out_of_range("no parameter named '" + name + "'");
    return it->second;
  }
  bool get_bool(const std::string& name) const { return get<bool>(name); }
  std::int64_t get_int(const std::string& name) const { return get<std::int64_t>(name); }
  double get_float(const std::string& name) const {
    const Value& v = at(name);
    if (auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    return get<double>(name);
  }
  const std::string& get_string(const std::string& name) const { return get<std::string>(name); }

  void set(const std::string& name, Value v) { values_[name] = std::move(v); }
  const std::map<std::string, Value>& values() const { return values_; }

 private:
  template <class T>
  const T& get(const std::string& name) const {
    const Value& v = at(name);
    if (auto* p = std::get_if<T>(&v)) return *p;
    throw std::invalid_argument("parameter '" + name + "' has type " + to_string(type_of(v)));
  }
  std::map<std::string, Value> values_;
};

inline std::string to_string(const Value& v) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      std::string s = std::to_string(d);
      // Trim trailing zeros but keep one digit after the point: 0.100000 -> 0.1, 2.000 -> 2.0
      while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
      return s;
    }
    std::string operator()(const std::string& s) const { return s; }
  };
  return std::visit(Visitor{}, v);
}

}  // namespace orch
