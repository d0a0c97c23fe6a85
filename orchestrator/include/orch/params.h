// Plugin parameters: the schema a plugin declares as data, and the resolved values it receives.
//
// A plugin never parses YAML. It declares each parameter, once, in one line (name, type, default,
// allowed values, bounds, one line of doc, its history); the host validates the user's experiment
// file against that schema before anything runs, fills in defaults, and hands the plugin a
// complete, typed `Params`. This header is torch-free so the planner can use it without LibTorch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
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

/// One declared parameter of a plugin: what `param(...)` below builds (one line each), and what
/// the host reads. The history fields are data, so the configuration hash follows from them.
struct ParamSpec {
  std::string name;  ///< key in the experiment file, e.g. "depth"
  ParamType type = ParamType::kString;
  Value default_value;         ///< used when the experiment file does not set it
  std::vector<Value> allowed;  ///< if non-empty, the value must be one of these
  std::optional<double> min;   ///< inclusive lower bound for int/float
  std::optional<double> max;   ///< inclusive upper bound for int/float
  std::string doc;             ///< one line shown by `orch plugins`
  /// The plugin version that first declared the parameter; "" for one of its first.
  std::string since = {};
  /// Non-empty for a parameter added after configurations were recorded (the plugin version
  /// that added it): while it has its default value it is left out of the configuration hash,
  /// so those configurations keep their hash (and a sweep over an older database resumes them
  /// instead of running them again). Any other value is hashed as usual.
  std::string hash_exempt_since = {};
  /// For a string parameter naming a file (a model archive, say): the file's bytes are part of
  /// the configuration, as its path is, so a file rewritten at the same path makes a new
  /// configuration instead of resuming the old one's results. The planner reads the file where
  /// it plans (a relative path from the current directory); a file it cannot read there adds
  /// nothing, and the plugin's own plan check says whether that is an error.
  bool hash_file_content = false;

  /// True when the parameter at its default is left out of the configuration hash.
  bool hash_exempt_at_default() const { return !hash_exempt_since.empty(); }
};

/// The builder behind `param(name)`: a parameter of value type T (bool, std::int64_t, double,
/// std::string), converted to a ParamSpec where a schema lists it. Each call returns the
/// builder, so a parameter reads as one line:
///   param("workers").integer().min(0).max(256).default_(0).doc("decoding threads")
/// Without default_() the default is T's zero value (false, 0, 0.0, "").
template <class T>
class TypedParam {
 public:
  TypedParam(std::string name, ParamType type) {
    spec_.name = std::move(name);
    spec_.type = type;
    spec_.default_value = T{};
  }
  TypedParam default_(T value) && {
    return set([&](ParamSpec& s) { s.default_value = value; });
  }
  /// The values allowed, e.g. .one_of({"orch", "cudnn"}).
  TypedParam one_of(std::initializer_list<T> values) && {
    return set([&](ParamSpec& s) { s.allowed.assign(values.begin(), values.end()); });
  }
  TypedParam min(double bound) && {
    static_assert(kNumeric, "min() is for integer() and number() parameters");
    return set([&](ParamSpec& s) { s.min = bound; });
  }
  TypedParam max(double bound) && {
    static_assert(kNumeric, "max() is for integer() and number() parameters");
    return set([&](ParamSpec& s) { s.max = bound; });
  }
  TypedParam doc(std::string line) && {
    return set([&](ParamSpec& s) { s.doc = std::move(line); });
  }
  /// The plugin version that added the parameter (ParamSpec::since).
  TypedParam since(std::string version) && {
    return set([&](ParamSpec& s) { s.since = std::move(version); });
  }
  /// Added in `version` after configurations were recorded: left out of the hash at its default
  /// (ParamSpec::hash_exempt_since). Says since() too.
  TypedParam hash_exempt_since(std::string version) && {
    return set([&](ParamSpec& s) {
      s.since = version;
      s.hash_exempt_since = std::move(version);
    });
  }
  /// The named file's bytes are hashed too (ParamSpec::hash_file_content).
  TypedParam hash_file_content() && {
    static_assert(std::is_same_v<T, std::string>, "hash_file_content() is for string() parameters");
    return set([](ParamSpec& s) { s.hash_file_content = true; });
  }

  /// Implicit, so a schema's std::vector<ParamSpec> lists the builders as they are.
  operator ParamSpec() && { return std::move(spec_); }

 private:
  static constexpr bool kNumeric = std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>;
  template <class Fn>
  TypedParam set(Fn&& fn) {
    fn(spec_);
    return std::move(*this);
  }
  ParamSpec spec_;
};

/// A parameter's name, waiting for its type: param("depth").integer()...
class ParamName {
 public:
  explicit ParamName(std::string name) : name_(std::move(name)) {}
  TypedParam<bool> boolean() const { return {name_, ParamType::kBool}; }
  TypedParam<std::int64_t> integer() const { return {name_, ParamType::kInt}; }
  TypedParam<double> number() const { return {name_, ParamType::kFloat}; }
  TypedParam<std::string> string() const { return {name_, ParamType::kString}; }

 private:
  std::string name_;
};

/// Starts a parameter's declaration; see TypedParam.
inline ParamName param(std::string name) { return ParamName(std::move(name)); }

/// Resolved parameters handed to a plugin. The host attaches the plugin's schema (with_schema),
/// so a name the values leave out reads as its declared default: a plugin never states a
/// default of its own (`p.get_bool("fused_bn")`, never `p.has(...) ? ... : false`).
class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, Value> values) : values_(std::move(values)) {}

  /// These values, with every parameter of `schema` they leave out read as its default.
  Params with_schema(const std::vector<ParamSpec>& schema) const {
    Params out(values_);
    for (const ParamSpec& spec : schema) out.defaults_[spec.name] = spec.default_value;
    return out;
  }

  /// Set, or declared with a default by the attached schema.
  bool has(const std::string& name) const {
    return values_.count(name) != 0 || defaults_.count(name) != 0;
  }
  const Value& at(const std::string& name) const {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    if (auto it = defaults_.find(name); it != defaults_.end()) return it->second;
    throw std::out_of_range("no parameter named '" + name + "'");
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
  /// The values set (the planner sets every declared one); defaults read through at() only.
  const std::map<std::string, Value>& values() const { return values_; }

 private:
  template <class T>
  const T& get(const std::string& name) const {
    const Value& v = at(name);
    if (auto* p = std::get_if<T>(&v)) return *p;
    throw std::invalid_argument("parameter '" + name + "' has type " + to_string(type_of(v)));
  }
  std::map<std::string, Value> values_;
  std::map<std::string, Value> defaults_;  ///< from with_schema
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
